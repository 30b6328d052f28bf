"""Every service's real console script: -h at 80 columns lists each option with its env
names and default in full, --version prints the version, and a bad providers config is
refused the same way by all (`proxyfleet-<service>: ...`, exit code 2)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proxyfleet.api.main import SERVICE as API
from proxyfleet.common.host import Service
from proxyfleet.common.host.command import all_options, env_and_default
from proxyfleet.gc.main import SERVICE as GC
from proxyfleet.health.main import SERVICE as HEALTH
from proxyfleet.provisioner_kvm.main import SERVICE as KVM
from proxyfleet.provisioner_local.main import SERVICE as LOCAL

SERVICES = [API, LOCAL, KVM, HEALTH, GC]
BIN = Path(sys.executable).parent


def run(service: Service[Any], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYFLEET_")}
    return subprocess.run(
        [str(BIN / f"proxyfleet-{service.name}"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "COLUMNS": "80"},
    )


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_short_help_at_80_columns_cuts_nothing(service: Service[Any]) -> None:
    done = run(service, "-h")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    text = " ".join(line.strip() for line in lines)
    for spec in all_options(service):
        assert spec.flag in text
        assert env_and_default(spec) in text, spec.field


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_version_and_a_bad_providers_config(service: Service[Any], tmp_path: Path) -> None:
    done = run(service, "--version")
    version = importlib.metadata.version(f"proxyfleet-{service.name}")
    assert (done.returncode, done.stdout) == (0, f"proxyfleet-{service.name} {version}\n")

    missing = tmp_path / "missing.yaml"
    args = ["--providers-config", str(missing)]
    if service.name.startswith("provisioner"):
        args += ["--provider", "p1"]
    done = run(service, *args)
    assert done.returncode == 2
    assert done.stderr == (
        f"proxyfleet-{service.name}: {missing}: cannot read the providers config: "
        "No such file or directory\n"
    )


def test_a_missing_or_bad_flag_is_refused_on_one_line_with_exit_2() -> None:
    done = run(LOCAL)
    assert done.returncode == 2
    assert done.stderr == (
        "proxyfleet-provisioner-local: Missing option '--provider'. "
        "(see proxyfleet-provisioner-local --help)\n"
    )
    done = run(GC, "--interval", "soon")
    assert done.returncode == 2
    assert done.stderr.startswith("proxyfleet-gc: Invalid value for '--interval': 'soon'")
    done = run(GC, "--outbox-high-water", "-1")
    assert done.returncode == 2
    assert "--outbox-high-water: expected 0 (no mark) or a number of entries" in done.stderr
