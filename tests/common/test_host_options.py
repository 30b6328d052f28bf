"""Options generated from a settings dataclass: docstring as help, env name by one rule,
default from the dataclass; -h, --version, comma lists and env aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest
from click.testing import CliRunner

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.common.core.settings import CommonSettings, option
from proxyfleet.common.host import Parts, Service, env_name
from proxyfleet.common.host.command import all_options, build_settings, command
from proxyfleet.common.host.options import options_for


@dataclass(frozen=True, slots=True)
class DemoSettings:
    common: CommonSettings
    """Filled by the host, not an option."""
    zone: str = option(env_aliases=("PROXYFLEET_OLD_ZONE",))
    """Zone to serve."""
    rate: float = 2.5
    """Probes per second,
    per worker."""
    workers: int = 4
    """Worker tasks."""
    verbose: bool = False
    """Log every probe."""
    mode: Literal["fast", "slow"] = "fast"
    """How to probe."""
    tokens: tuple[str, ...] = option((), flag="--token")
    """Tokens; repeatable or comma-separated."""
    from_config: float = option(1.0, exposed=False)
    """Comes from the providers config."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"--workers: expected at least 1, got {self.workers}")


async def _build(_: object) -> Parts:
    return Parts(components={})


DEMO = Service(name="demo-svc", summary="A demo service.", settings=DemoSettings, build=_build)


def test_env_names_follow_one_rule() -> None:
    assert env_name("demo-svc", "rate", common=False) == "PROXYFLEET_DEMO_SVC_RATE"
    assert env_name("demo-svc", "nats_url", common=True) == "PROXYFLEET_NATS_URL"


def test_each_field_becomes_an_option_with_its_docstring_type_and_default() -> None:
    specs = {s.field: s for s in options_for(DemoSettings, "demo-svc")}
    assert list(specs) == ["zone", "rate", "workers", "verbose", "mode", "tokens"]
    rate = specs["rate"]
    assert (rate.flag, rate.kind, rate.default, rate.required) == ("--rate", float, 2.5, False)
    assert rate.help == "Probes per second, per worker."
    assert rate.envvars == ("PROXYFLEET_DEMO_SVC_RATE",)
    assert specs["zone"].required
    assert specs["zone"].envvars == ("PROXYFLEET_DEMO_SVC_ZONE", "PROXYFLEET_OLD_ZONE")
    assert specs["mode"].choices == ("fast", "slow")
    assert (specs["tokens"].flag, specs["tokens"].kind) == ("--token", tuple)


def test_a_field_without_docstring_is_refused() -> None:
    @dataclass(frozen=True)
    class Undocumented:
        rate: float = 1.0

    with pytest.raises(TypeError, match=r"Undocumented.rate: a settings field needs a docstring"):
        options_for(Undocumented, "x")


def test_flags_env_aliases_and_comma_lists_build_the_settings() -> None:
    specs = all_options(DEMO)
    seen: list[tuple[CommonSettings, DemoSettings]] = []

    def parse(args: list[str], env: dict[str, str]) -> tuple[CommonSettings, DemoSettings]:
        cmd = command(DEMO)
        cmd.callback = lambda **values: seen.append(build_settings(DEMO, specs, values))
        result = CliRunner().invoke(cmd, args, env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return seen[-1]

    common, demo = parse(
        ["--token", "a,b", "--token", " c ", "--verbose", "--mode", "SLOW"],
        {"PROXYFLEET_OLD_ZONE": "z-old", "NATS_URL": "nats://old:1"},
    )
    assert demo.zone == "z-old"
    assert demo.tokens == ("a", "b", "c")
    assert (demo.verbose, demo.mode, demo.rate, demo.from_config) == (True, "slow", 2.5, 1.0)
    assert demo.common is common
    assert common.nats_url == "nats://old:1"

    _, demo = parse(
        [],
        {
            "PROXYFLEET_DEMO_SVC_ZONE": "z-new",
            "PROXYFLEET_OLD_ZONE": "z-old",
            "PROXYFLEET_DEMO_SVC_TOKENS": "x,y",
            "PROXYFLEET_DEMO_SVC_WORKERS": "7",
        },
    )
    assert (demo.zone, demo.tokens, demo.workers) == ("z-new", ("x", "y"), 7)


def test_settings_checks_raise_config_error() -> None:
    specs = all_options(DEMO)
    values = {s.field: s.default for s in specs} | {"zone": "z", "workers": 0}
    with pytest.raises(ConfigError, match="--workers: expected at least 1, got 0"):
        build_settings(DEMO, specs, values)


def test_h_is_help_and_help_shows_env_and_default_at_80_columns() -> None:
    result = CliRunner().invoke(command(DEMO), ["-h"], terminal_width=80)
    assert result.exit_code == 0
    assert "A demo service." in result.output
    assert "Probes per second, per worker." in result.output
    assert "env PROXYFLEET_DEMO_SVC_RATE; default 2.5" in result.output
    assert "env PROXYFLEET_DEMO_SVC_ZONE, PROXYFLEET_OLD_ZONE" in result.output
    assert "--from-config" not in result.output
    assert max(map(len, result.output.splitlines())) <= 80


def test_version_prints_the_package_version() -> None:
    result = CliRunner().invoke(command(DEMO), ["--version"])
    assert result.exit_code == 0
    assert result.output == "proxyfleet-demo-svc unknown\n"  # no such distribution
