"""Proxies: create, list, inspect and delete (admin scope)."""
