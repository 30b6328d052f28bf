"""The settings tables of docs/configuration.md, rendered from the same option list as
`--help` (tests/common/test_configuration_doc.py compares them with the file, and
rewrites them when run as a script)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host.command import all_options
from proxyfleet.common.host.options import OptionSpec, default_text
from proxyfleet.common.host.spec import Service

BEGIN = "<!-- settings tables: generated from the settings dataclasses -->"
END = "<!-- end of the settings tables -->"


def _row(spec: OptionSpec) -> str:
    flag = f"`{spec.flag}`" if spec.kind is not bool else f"`{spec.flag}` / `--no-{spec.flag[2:]}`"
    env = f"`{spec.env}`"
    if len(spec.envvars) > 1:
        env += " (or " + ", ".join(f"`{e}`" for e in spec.envvars[1:]) + ")"
    default = default_text(spec)
    return f"| {flag} | {env} | {default.replace('|', '/') if default else ''} |"


def _table(specs: Sequence[OptionSpec]) -> list[str]:
    return ["| option | environment | default |", "| --- | --- | --- |", *map(_row, specs)]


def settings_tables(services: Sequence[Service[Any]]) -> str:
    """Markdown: the options every command takes, then each command's own."""
    first = all_options(services[0])
    lines = [
        BEGIN,
        "",
        "Every command:",
        "",
        *_table([s for s in first if s.owner is CommonSettings]),
    ]
    for service in services:
        own = [s for s in all_options(service) if s.owner is not CommonSettings]
        lines += ["", f"`proxyfleet-{service.name}`:", "", *_table(own)]
    return "\n".join([*lines, "", END])
