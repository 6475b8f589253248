"""mailbridge: a self-hostable email platform with an automation workflow engine."""

__version__ = "0.1.0"
