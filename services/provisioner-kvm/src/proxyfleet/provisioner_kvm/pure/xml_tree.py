"""ElementTree helpers shared by the domain XML and its metadata element."""

from __future__ import annotations

import xml.etree.ElementTree as ET  # builds XML; parses only libvirt's output


def sub_element(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    """A child `tag` of `parent` with these attributes and text."""
    element = ET.SubElement(parent, tag, attrs)
    element.text = text
    return element


def parse_or_none(text: str) -> ET.Element | None:
    """The root element of `text`, or None if it is not well-formed XML."""
    try:
        return ET.fromstring(text)  # noqa: S314 - libvirt's own output, not untrusted input
    except ET.ParseError:
        return None
