"""Client usage: bytes and connections per UTC day, as the gateways keep them."""
