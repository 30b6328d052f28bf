"""Shared building blocks of Proxyfleet: wire models, subjects, settings, stores, ports."""
