"""`python -m proxyfleet.cli`: the same as the `proxyfleet` command."""

from proxyfleet.cli.main import main

main()
