"""domain: see docs/architecture.md."""
