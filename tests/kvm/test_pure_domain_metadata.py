"""Our metadata element: written for setMetadata, read back in every form libvirt returns."""

from __future__ import annotations

import pytest

from proxyfleet.provisioner_kvm.pure.domain_metadata import (
    METADATA_URI,
    DomainIdentity,
    Rebuild,
    identity_from_domain_xml,
    metadata_element_xml,
    parse_metadata,
    redact_xml,
)


def test_identity_from_foreign_domains() -> None:
    plain = "<domain type='kvm'><name>web</name></domain>"
    other_app = (
        "<domain type='kvm'><name>web</name><metadata>"
        "<app:instance xmlns:app='https://other.example/ns'>"
        "<app:proxy-id>x</app:proxy-id><app:installation-id>y</app:installation-id>"
        "</app:instance></metadata></domain>"
    )
    for text in (plain, other_app, "<domain", ""):
        assert identity_from_domain_xml(text) is None


def test_metadata_element_is_unprefixed() -> None:
    text = metadata_element_xml("p1", "inst-1")
    assert text == (
        "<instance><proxy-id>p1</proxy-id><installation-id>inst-1</installation-id></instance>"
    )
    assert parse_metadata(text) == DomainIdentity("p1", "inst-1", 0.0)


def test_metadata_element_with_creation_time() -> None:
    text = metadata_element_xml("p1", "inst-1", 1700000000.5)
    assert "<created-at>1700000000.5</created-at>" in text
    assert parse_metadata(text) == DomainIdentity("p1", "inst-1", 1700000000.5)


@pytest.mark.parametrize("value", ["", "soon", "nan", "inf", "-5"])
def test_unreadable_creation_time_counts_as_old(value: str) -> None:
    text = (
        "<instance><proxy-id>p1</proxy-id><installation-id>i1</installation-id>"
        f"<created-at>{value}</created-at></instance>"
    )
    assert parse_metadata(text) == DomainIdentity("p1", "i1", 0.0)


@pytest.mark.parametrize(
    "text",
    [
        # Exactly what libvirt's metadata(VIR_DOMAIN_METADATA_ELEMENT, uri) returns:
        # no namespace declaration, indented.
        "<instance>\n  <proxy-id>p1</proxy-id>\n  <installation-id>i1</installation-id>\n"
        "</instance>",
        f'<proxyfleet:instance xmlns:proxyfleet="{METADATA_URI}">'
        "<proxyfleet:proxy-id>p1</proxyfleet:proxy-id>"
        "<proxyfleet:installation-id>i1</proxyfleet:installation-id></proxyfleet:instance>",
        f'<instance xmlns="{METADATA_URI}"><proxy-id>p1</proxy-id>'
        "<installation-id>i1</installation-id></instance>",
        # A prefix whose declaration was lost.
        "<?xml version='1.0'?><proxyfleet:instance><proxyfleet:proxy-id>p1</proxyfleet:proxy-id>"
        "<proxyfleet:installation-id>i1</proxyfleet:installation-id></proxyfleet:instance>",
    ],
)
def test_parse_metadata_forms(text: str) -> None:
    assert parse_metadata(text) == DomainIdentity("p1", "i1")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not xml",
        "<instance><proxy-id>p1</proxy-id>",
        "<instance><proxy-id>p1</proxy-id></instance>",
        "<instance><proxy-id> </proxy-id><installation-id>i1</installation-id></instance>",
        "<other><proxy-id>p1</proxy-id><installation-id>i1</installation-id></other>",
        "<x:instance xmlns:x='https://other.example/ns'><x:proxy-id>p1</x:proxy-id>"
        "<x:installation-id>i1</x:installation-id></x:instance>",
        "<a/><b/>",
    ],
)
def test_parse_metadata_malformed_is_none(text: str) -> None:
    assert parse_metadata(text) is None


def test_metadata_keeps_what_rebuilds_the_proxy_and_traces_hide_the_password() -> None:
    rebuild = Rebuild(
        zone="z1",
        username="u",
        password="s3<cr&t",
        labels={"tier": "gold"},
        placement={"image": "debian-12"},
    )
    text = metadata_element_xml("p1", "inst-1", 1700000000.5, rebuild)

    assert parse_metadata(text) == DomainIdentity("p1", "inst-1", 1700000000.5, rebuild)
    assert "s3" not in redact_xml(text)
    assert parse_metadata(metadata_element_xml("p1", "inst-1")) == DomainIdentity("p1", "inst-1")
