"""NATS: the connection, the streams and the publisher (`jetstream`), and the outbox
relay that publishes what the store's scripts appended (`relay`)."""
