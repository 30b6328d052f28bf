"""The `proxyfleet` command, over the Python client (`proxyfleet.client`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("proxyfleet-cli")
except PackageNotFoundError:  # run from a source tree without installing
    __version__ = "0.0.0"
