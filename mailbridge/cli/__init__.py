"""The ``mailbridge`` command: server commands, operator commands, resource groups."""
