"""Providers: the configured provider instances, their zones and proxy counts, and the
proxies admins add at run time to a provider whose type takes them."""
