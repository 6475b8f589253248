"""The application layer: one module per resource; api, cli and runner call only these."""
