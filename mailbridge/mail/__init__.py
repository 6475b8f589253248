"""Mail: composing messages, templates, DKIM, providers, tracking, inbound, bounces."""
