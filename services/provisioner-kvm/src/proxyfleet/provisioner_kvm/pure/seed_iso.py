"""The NoCloud seed ISO, built in memory: cloud-init finds it by its volume label CIDATA."""

from __future__ import annotations

import io

import pycdlib

VOLUME_LABEL = "CIDATA"

# Long name -> plain ISO 9660 name. ISO 9660 names cannot hold '-', so cloud-init reads
# the long names from the Joliet or Rock Ridge records.
_FILES = {
    "user-data": "/USERDATA.;1",
    "meta-data": "/METADATA.;1",
    "network-config": "/NETWORKCONFIG.;1",
}


def build_seed_iso(user_data: str, meta_data: str, network_config: str | None = None) -> bytes:
    """The bytes of a NoCloud seed ISO holding user-data, meta-data and network-config.

    The result holds the user-data (credentials): never log it or keep it on disk.
    """
    contents = {"user-data": user_data, "meta-data": meta_data}
    if network_config is not None:
        contents["network-config"] = network_config
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, joliet=3, rock_ridge="1.09", vol_ident=VOLUME_LABEL)
    try:
        for name, text in contents.items():
            data = text.encode()
            # pycdlib reads the file object only at write time, so it stays open until then.
            iso.add_fp(
                io.BytesIO(data),
                len(data),
                _FILES[name],
                rr_name=name,
                joliet_path=f"/{name}",
            )
        out = io.BytesIO()
        iso.write_fp(out)
    finally:
        iso.close()
    return out.getvalue()


def read_seed_iso(data: bytes) -> dict[str, str]:
    """The files at the root of a seed ISO, by their long (Rock Ridge or Joliet) names."""
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(data))
    try:
        # Prefer the long names cloud-init sees; fall back to plain ISO 9660 names.
        if iso.has_rock_ridge():
            kind = "rr_path"
        elif iso.has_joliet():
            kind = "joliet_path"
        else:
            kind = "iso_path"
        files: dict[str, str] = {}
        for _root, _dirs, names in iso.walk(**{kind: "/"}):
            for name in names:
                buf = io.BytesIO()
                iso.get_file_from_iso_fp(buf, **{kind: f"/{name}"})
                files[str(name)] = buf.getvalue().decode()
            break  # the root only: a seed has no directories
    finally:
        iso.close()
    return files
