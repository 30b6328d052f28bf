"""Providers: the configured provider instances, their zones and proxy counts."""
