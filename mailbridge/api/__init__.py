"""The HTTP API: app factory, middleware, error envelope, routers."""
