"""Placement validators of the installed provider types, found as the API finds them
(`validator_for`): the 400 for a placement a provider refuses."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from proxyfleet.common.core.errors import InvalidInput
from proxyfleet.common.providers import (
    INVALID_PLACEMENT,
    NoPlacement,
    ProviderConfig,
    parse_providers_config,
    validator_for,
)

CONFIG = parse_providers_config(
    """
providers:
  - name: dev
    type: local
    zones: [z1]
    local: {}
  - name: onprem
    type: kvm
    zones: [rack-a]
    kvm:
      hosts:
        - {name: hv1, zone: rack-a, ssh_address: 127.0.0.1, ssh_key_file: /k,
           host_key: "ssh-ed25519 AAAA"}
      images:
        debian: {url: "https://images.example/debian.qcow2"}
      default_image: debian
""",
    "providers.yaml",
)
LOCAL, KVM = CONFIG.get("dev"), CONFIG.get("onprem")


def refusal(provider: ProviderConfig, placement: Mapping[str, str]) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validator_for(provider.type).validate(provider, placement)
    assert info.value.code == INVALID_PLACEMENT
    return info.value


def test_local_takes_only_an_egress_address() -> None:
    validator_for("local").validate(LOCAL, {})
    validator_for("local").validate(LOCAL, {"egress_address": "127.77.9.9"})
    message = str(refusal(LOCAL, {"image": "debian"}))
    assert message == (
        "provider 'dev': placement: unknown key(s) image; expected only egress_address"
    )


@pytest.mark.parametrize(
    "placement",
    [{}, {"image": "debian"}, {"image_url": "https://x.example/a.qcow2", "image_format": "raw"}],
)
def test_kvm_accepts_what_it_can_boot(placement: dict[str, str]) -> None:
    validator_for("kvm").validate(KVM, placement)


@pytest.mark.parametrize(
    ("placement", "named"),
    [
        ({"image": "ubuntu"}, "placement.image"),
        ({"image": "debian", "image_url": "https://x.example/a.qcow2"}, "image_url"),
        ({"image_url": "ftp://x.example/a.qcow2"}, "placement.image_url"),
        ({"image_url": "https://x.example/a", "image_sha256": "abc"}, "placement.image_sha256"),
        ({"image_sha256": "a" * 64}, "only applies together with image_url"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_kvm_refuses_naming_the_key(placement: dict[str, str], named: str) -> None:
    assert named in str(refusal(KVM, placement))


def test_a_type_without_a_validator_takes_no_placement() -> None:
    assert isinstance(validator_for("kubernetes"), NoPlacement)
