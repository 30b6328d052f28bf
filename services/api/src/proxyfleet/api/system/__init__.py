"""Liveness, readiness and metrics: no token needed."""
