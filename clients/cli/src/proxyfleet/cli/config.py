"""Where the command finds the API: flags, else PROXYFLEET_URL / PROXYFLEET_TOKEN, else
the config file `proxyfleet login` writes (TOML, mode 0600: it holds the token)."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

CONFIG_ENV = "PROXYFLEET_CONFIG"
"""The config file's path, when set (tests, several installations side by side)."""


class ConfigError(Exception):
    """The config file exists but cannot be used (the message names it)."""


@dataclass(frozen=True)
class Config:
    url: str = ""
    """The API's base URL, e.g. http://127.0.0.1:8080."""
    token: str = ""
    """The secret of an API token (admin or client scope)."""


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    """$PROXYFLEET_CONFIG, else $XDG_CONFIG_HOME/proxyfleet/config.toml, else
    ~/.config/proxyfleet/config.toml."""
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "proxyfleet" / "config.toml"


def parse_config(text: str, where: str) -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{where}: not TOML: {e}") from None
    unknown = set(data) - {"url", "token"}
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} (expected url, token)")
    for key in ("url", "token"):
        if not isinstance(data.get(key, ""), str):
            raise ConfigError(f"{where}: {key} must be a string")
    return Config(url=data.get("url", ""), token=data.get("token", ""))


def config_text(config: Config) -> str:
    # A JSON string is a valid TOML basic string (the same escapes).
    return (
        "# Written by `proxyfleet login`. The token is a secret: keep this file private.\n"
        f"url = {json.dumps(config.url)}\n"
        f"token = {json.dumps(config.token)}\n"
    )


def read_config(path: Path) -> Config:
    """The file's settings; an absent file is an empty Config."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return Config()
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    return parse_config(text, str(path))


def write_config(path: Path, config: Config) -> None:
    """Write it with mode 0600 from the start (never readable by others, even briefly);
    a folder made for it is 0700."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(config_text(config))
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT


def resolve(url: str | None, token: str | None, path: Path) -> Config:
    """Flags or environment (typer reads both) first, then the file for what is missing.
    The file's token goes only to the file's URL: another URL given without a token gets
    none (a token is a secret of one installation)."""
    if url and token:
        return Config(url=url, token=token)
    stored = read_config(path)
    if url and url.rstrip("/") != stored.url.rstrip("/"):
        return Config(url=url, token=token or "")
    return Config(url=url or stored.url, token=token or stored.token)
