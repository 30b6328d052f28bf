"""Logs (structlog, secrets redacted), Prometheus metric helpers and this process's
replica name."""
