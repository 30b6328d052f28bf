"""Starts proxy.py for one proxy, reading its credentials from a 0600 file instead of the
command line (where every local user could read them). Usage: python -m <this> ARGS_FILE"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import proxy

from proxyfleet.provisioner_local.commands import ProxyPyArgs


def main() -> None:
    args = msgspec.json.decode(Path(sys.argv[1]).read_bytes(), type=ProxyPyArgs)
    sys.argv = ["proxy", *args.argv]
    proxy.main(basic_auth=args.basic_auth)


if __name__ == "__main__":
    main()
