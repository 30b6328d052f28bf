from __future__ import annotations

import io

import pycdlib
import pytest

from proxyfleet.provisioner_kvm.pure.seed_iso import build_seed_iso, read_seed_iso

USER_DATA = "#cloud-config\nhostname: pf-p1\nwrite_files: []\n"
META_DATA = "instance-id: p1\nlocal-hostname: pf-p1\n"
NETWORK = "version: 2\nethernets: {}\n"


def _open(data: bytes) -> pycdlib.PyCdlib:
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(data))
    return iso


@pytest.mark.parametrize("network_config", [None, NETWORK])
def test_seed_iso_round_trip(network_config: str | None) -> None:
    data = build_seed_iso(USER_DATA, META_DATA, network_config)
    expected = {"user-data": USER_DATA, "meta-data": META_DATA}
    if network_config is not None:
        expected["network-config"] = network_config
    assert read_seed_iso(data) == expected


def test_seed_iso_label_and_names() -> None:
    iso = _open(build_seed_iso(USER_DATA, META_DATA, NETWORK))
    try:
        # cloud-init's NoCloud finds the seed by this label.
        assert iso.pvd.volume_identifier.rstrip(b" ") == b"CIDATA"
        assert iso.has_rock_ridge()
        assert iso.has_joliet()
        for kind in ("rr_path", "joliet_path"):
            names: set[str] = set()
            for _root, _dirs, files in iso.walk(**{kind: "/"}):
                names.update(files)
            assert names == {"user-data", "meta-data", "network-config"}
        out = io.BytesIO()
        iso.get_file_from_iso_fp(out, joliet_path="/user-data")
        assert out.getvalue().decode() == USER_DATA
    finally:
        iso.close()


def test_seed_iso_utf8_content() -> None:
    text = "#cloud-config\n# héllo ✓\n"
    assert read_seed_iso(build_seed_iso(text, META_DATA))["user-data"] == text
