"""GET /v1/events: the event stream (and probe results) as server-sent events."""
