"""The command line of a service: click options generated from its settings, `-h`,
`--version`, help readable at 80 columns, and every configuration error reported the same
way (`proxyfleet-<service>: <message>`, exit code 2)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
import typing
from collections.abc import Sequence
from typing import Any, NoReturn, TypeVar

import click

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings
from proxyfleet.common.host import runtime
from proxyfleet.common.host.options import OptionSpec, default_text, options_for, split_list
from proxyfleet.common.host.spec import Service
from proxyfleet.common.observability.logging import configure_logging
from proxyfleet.common.providers import load_providers_config
from proxyfleet.common.providers.pool_checks import check_config_pools

S = TypeVar("S")

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def all_options(service: Service[Any]) -> list[OptionSpec]:
    """Every option of the service's command: the common ones, then its own."""
    specs = options_for(CommonSettings, service.name) + options_for(service.settings, service.name)
    flags = [s.flag for s in specs]
    if len(flags) != len(set(flags)):
        raise TypeError(f"{service.name}: two settings share a flag: {sorted(flags)}")
    return specs


class _CommaList(click.ParamType[str]):
    """A repeatable option whose env var is one comma-separated list."""

    name = "text"
    envvar_list_splitter = ","

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value


def env_and_default(spec: OptionSpec) -> str:
    """The help line under an option's text: its env names and default."""
    env = f"env {', '.join(spec.envvars)}"
    return env if spec.required else f"{env}; default {default_text(spec) or 'none'}"


class _HostCommand(click.Command):
    """Help as a list: each option's flags on a line, its text below, then its env names
    and default on lines of their own. Nothing is cut at 80 columns, unlike a table."""

    def __init__(self, *args: Any, specs: Sequence[OptionSpec], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._extra = {s.field: env_and_default(s) for s in specs}

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Options"):
            for param in self.get_params(ctx):
                record = param.get_help_record(ctx)
                if record is None:
                    continue
                formatter.write_text(record[0])
                with formatter.indentation(), formatter.indentation():
                    formatter.write_text(record[1])
                    if param.name in self._extra:
                        formatter.write_text(self._extra[param.name])


def _click_option(spec: OptionSpec) -> click.Option:
    common: dict[str, Any] = {
        "envvar": list(spec.envvars),
        "help": spec.help,
        "show_default": False,  # on a line of its own (_HostCommand)
        "required": spec.required,
    }
    name = spec.field
    if spec.kind is bool:
        flag = spec.flag.removeprefix("--")
        decls = [name, f"--{flag}/--no-{flag}"]
        return click.Option(decls, is_flag=True, default=spec.default, **common)
    if spec.kind is tuple:
        return click.Option(
            [name, spec.flag], type=_CommaList(), multiple=True, default=spec.default, **common
        )
    kind: Any = {str: click.STRING, int: click.INT, float: click.FLOAT}[spec.kind]
    if spec.choices:
        kind = click.Choice(spec.choices, case_sensitive=False)
    if spec.required:  # no default at all: click (8.2+) takes default=None as a value
        return click.Option([name, spec.flag], type=kind, **common)
    return click.Option([name, spec.flag], type=kind, default=spec.default, **common)


def _version(service: str) -> str:
    try:
        return importlib.metadata.version(f"proxyfleet-{service}")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_settings(
    service: Service[S], specs: Sequence[OptionSpec], values: dict[str, Any]
) -> tuple[CommonSettings, S]:
    """The settings objects from parsed option values; raises ConfigError (a settings
    class's own checks)."""

    def kwargs(cls: type[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in specs:
            if spec.owner is cls:
                value = values[spec.field]
                out[spec.field] = split_list(value) if spec.kind is tuple else value
        return out

    common = CommonSettings(**kwargs(CommonSettings))
    own = kwargs(service.settings)
    hints = typing.get_type_hints(service.settings)
    for f in dataclasses.fields(service.settings):  # type: ignore[arg-type]
        if hints[f.name] is CommonSettings:
            own[f.name] = common
    return common, service.settings(**own)


def command(service: Service[Any]) -> click.Command:
    specs = all_options(service)
    prog = f"proxyfleet-{service.name}"

    def callback(**values: Any) -> None:
        raise SystemExit(run(service, specs, values))

    version = click.Option(
        ["--version"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        help="Print the version and exit.",
        callback=lambda ctx, _, on: _print_version(ctx, on, prog, _version(service.name)),
    )
    return _HostCommand(
        prog,
        specs=specs,
        callback=callback,
        params=[*(_click_option(s) for s in specs), version],
        help=service.summary,
        context_settings=CONTEXT,
    )


def _print_version(ctx: click.Context, on: bool, prog: str, version: str) -> None:
    if on and not ctx.resilient_parsing:
        click.echo(f"{prog} {version}")
        ctx.exit(0)


def run(service: Service[S], specs: Sequence[OptionSpec], values: dict[str, Any]) -> int:
    """Settings, logging, the providers config, then the service on its event loop."""
    try:
        common, settings = build_settings(service, specs, values)
        configure_logging(service.name, common.log_level, common.log_format)
        providers = load_providers_config(common.providers_config)
        check_config_pools(providers, common.providers_config)
        settings = service.configure(common, settings, providers)
    except ConfigError as exc:
        return runtime.report_config_error(service.name, exc)
    run_loop = service.loop(settings)
    return run_loop(runtime.serve(service, common, settings, providers))


def main(service: Service[Any], argv: Sequence[str] | None = None) -> NoReturn:
    """The console script of `service`: parse `argv` (default sys.argv), run, exit. A bad
    flag is reported like any configuration error: one line, exit code 2."""
    prog = f"proxyfleet-{service.name}"
    args = list(argv) if argv is not None else None
    try:
        code = command(service).main(args=args, prog_name=prog, standalone_mode=False)
    except click.UsageError as exc:
        print(f"{prog}: {exc.format_message()} (see {prog} --help)", file=sys.stderr)
        raise SystemExit(runtime.EXIT_CONFIG) from None
    except click.Abort:  # Ctrl-C while click itself was prompting or parsing
        raise SystemExit(runtime.EXIT_FAILED) from None
    raise SystemExit(code if isinstance(code, int) else 0)
