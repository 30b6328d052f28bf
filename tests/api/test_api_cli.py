"""The `proxyfleet-api` command refuses to start on bad configuration, with a message."""

from __future__ import annotations

from pathlib import Path

from tests.api.helpers import PROVIDERS_YAML
from tests.api.procs import run_cli


def test_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    res = run_cli("--providers-config", str(cfg))
    assert res.returncode != 0
    assert "no API token configured" in res.stderr
    assert "--insecure-dev" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_providers_config_names_file_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text("providers:\n  - name: x\n    type: local\n    zones: [a]\n    colour: red\n")
    env = {"PROXYFLEET_ADMIN_TOKENS": "ops:a-secret-of-16-chars"}
    res = run_cli("--providers-config", str(cfg), env=env)
    assert res.returncode != 0
    assert str(cfg) in res.stderr
    assert "colour" in res.stderr
    assert "Traceback" not in res.stderr

    res = run_cli("--providers-config", str(tmp_path / "missing.yaml"), "--insecure-dev")
    assert res.returncode != 0
    assert "missing.yaml" in res.stderr
    assert "cannot read" in res.stderr


def test_bad_setting_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    res = run_cli("--providers-config", str(cfg), "--insecure-dev", "--default-lease-ttl", "9000")
    assert res.returncode != 0
    assert "--default-lease-ttl" in res.stderr


def test_refuses_a_short_or_unnamed_token_naming_the_flag(tmp_path: Path) -> None:
    cfg = tmp_path / "providers.yaml"
    cfg.write_text(PROVIDERS_YAML)
    for args, expected in (
        (("--admin-token", "x"), "--admin-token (value 1): expected name:secret"),
        (("--client-token", "crawler:tiny-secret"), "at least 16 characters"),
    ):
        res = run_cli("--providers-config", str(cfg), *args)
        assert res.returncode == 2, res.stderr
        assert expected in res.stderr
        assert "tiny-secret" not in res.stderr
        assert "Traceback" not in res.stderr
