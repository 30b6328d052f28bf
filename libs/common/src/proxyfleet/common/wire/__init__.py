"""What travels between services and to clients: the msgspec models of proxies, leases and
intents, the events, every subject and stream name, and their JSON Schema. Pure."""
