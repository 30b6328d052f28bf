"""Every `proxyfleet` command the `make run` banner prints is the venv's script by its
path: `make run` (`uv run`) has the venv on its PATH, the user's shell does not, so the
bare name would be "command not found" there."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from proxyfleet.devstack.banner import banner, cli_command
from proxyfleet.devstack.options import StackOptions
from proxyfleet.devstack.stack import Stack

VENV_BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


def _stack(base: Path) -> Stack:
    return Stack(
        opts=StackOptions(base_dir=base),
        nats_url="nats://127.0.0.1:4333",
        redis_url="redis://127.0.0.1:6333/0",
        api_url="http://127.0.0.1:8080",
        gateway_url="http://127.0.0.1:8899",
        target_url="https://127.0.0.1:8443/",
        ca_file=str(base / "tls" / "ca.pem"),
    )


def _cli_calls(text: str) -> list[str]:
    """How each line that runs the CLI names it (the word before a subcommand)."""
    return re.findall(r"(\S*proxyfleet) (?:--token|lease|status|events|--help)\b", text)


def test_the_cli_is_named_by_its_path_even_when_path_finds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(REPO)
    assert cli_command() == str((VENV_BIN / "proxyfleet").relative_to(REPO))


def test_outside_the_repository_the_cli_path_is_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_command() == str(VENV_BIN / "proxyfleet")


def test_every_cli_call_in_the_banner_uses_the_venv_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    text = banner(_stack(tmp_path), tmp_path, "squid", tmp_path / "stack.env")
    calls = _cli_calls(text)
    # The two first commands, then status, events, --help, and the NATS line's events.
    assert len(calls) >= 6
    assert set(calls) == {str((VENV_BIN / "proxyfleet").relative_to(REPO))}
    assert os.access(VENV_BIN / "proxyfleet", os.X_OK)  # the command the banner names runs
