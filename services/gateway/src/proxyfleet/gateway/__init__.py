"""The gateway: one forward-proxy endpoint backed by leases."""
