"""The import contracts' patterns inside a name (`proxyfleet.provisioner_*`) name every
installed package they match, so a new provider package is covered with no edit."""

from __future__ import annotations

import pytest
from tools.lint.import_patterns import expand_options, installed

PROVISIONERS = [
    "proxyfleet.provisioner_gcp",
    "proxyfleet.provisioner_k8s",
    "proxyfleet.provisioner_kvm",
    "proxyfleet.provisioner_local",
    "proxyfleet.provisioner_static",
]


def test_a_pattern_inside_a_name_names_the_installed_packages() -> None:
    assert installed("proxyfleet.provisioner_*") == PROVISIONERS
    assert installed("proxyfleet.provisioner_k?s") == ["proxyfleet.provisioner_k8s"]


@pytest.mark.parametrize("name", ["proxyfleet.api", "proxyfleet.*.pure", "proxyfleet.**", "redis"])
def test_names_and_import_linters_own_wildcards_are_left_to_it(name: str) -> None:
    assert installed(name) == [name]


def test_a_pattern_that_names_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="names no installed module"):
        installed("proxyfleet.provisoner_*")


def test_contract_options_are_expanded_and_layers_keep_their_separator() -> None:
    options: dict[str, list[str]] = {
        "modules": ["proxyfleet.api", "proxyfleet.provisioner_*"],
        "layers": [
            "proxyfleet.bench",
            "proxyfleet.gc | proxyfleet.provisioner_k*",
            "proxyfleet.api : proxyfleet.provisioner_kvm*",
        ],
        "ignore_imports": ["proxyfleet.provisioner_* -> x"],
    }
    out = expand_options(options)
    assert out["modules"] == ["proxyfleet.api", *PROVISIONERS]
    assert out["layers"] == [
        "proxyfleet.bench",
        "proxyfleet.gc | proxyfleet.provisioner_k8s | proxyfleet.provisioner_kvm",
        "proxyfleet.api : proxyfleet.provisioner_kvm",
    ]
    assert out["ignore_imports"] == options["ignore_imports"]
