"""The pool operator's settings refuse what cannot work, naming the flag; its kube access
reads a kubeconfig's server, credentials and namespace (pure but for a file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from proxyfleet.common.core.errors import ConfigError
from proxyfleet.pool_operator.kube import load_access, namespaces
from proxyfleet.pool_operator.settings import PoolOperatorSettings


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"watch_namespaces": ("Team_A",)}, "--watch-namespaces: expected namespace names"),
        ({"status_interval": 0}, "--status-interval: expected seconds > 0, got 0"),
        ({"delete_poll": 2, "delete_wait": 1}, "--delete-wait: expected seconds >= --delete-poll"),
        ({"crd_poll": -1}, "--crd-poll"),
        ({"metrics_port": 70000}, "--metrics-port"),
    ],
)
def test_settings_refuse_what_cannot_work(kw: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("-", r"\-")):
        PoolOperatorSettings(**kw)  # type: ignore[arg-type]


def test_a_kubeconfig_gives_the_server_the_token_and_the_namespace(tmp_path: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://198.51.100.7:6443",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "tok-1"}}],
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "u"}},
            {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "team-b"}},
        ],
        "current-context": "main",
    }  # fmt: skip
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    access = load_access(PoolOperatorSettings(kubeconfig=str(path)))
    assert access.namespace == "default"
    info = access.connection()
    assert (info.server, info.token, info.scheme, info.insecure) == (
        "https://198.51.100.7:6443", "tok-1", "Bearer", True,
    )  # fmt: skip
    other = load_access(PoolOperatorSettings(kubeconfig=str(path), context="other"))
    assert other.namespace == "team-b"
    assert namespaces(PoolOperatorSettings(), other) == ["team-b"]
    assert namespaces(PoolOperatorSettings(watch_namespaces=("a", "b")), other) == ["a", "b"]
    with pytest.raises(ConfigError, match="cannot load the kubeconfig"):
        load_access(PoolOperatorSettings(kubeconfig=str(path), context="missing"))
