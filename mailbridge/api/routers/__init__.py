"""One module per resource; thin: parse, call a service, shape."""
