"""messaging: see docs/architecture.md."""
