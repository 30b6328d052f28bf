"""Every NATS subject and stream name, in one place.

Intents are work for provisioners (durable, work-queue). Events are facts for anyone
(durable, replayable). Probe results are high-volume figures on plain core NATS.
"""

from __future__ import annotations

INTENT_STREAM = "PROXYFLEET_INTENTS"
EVENT_STREAM = "PROXYFLEET_EVENTS"

INTENT_PREFIX = "proxyfleet.intents"
EVENT_PREFIX = "proxyfleet.events"
PROBE_PREFIX = "proxyfleet.probes"
CONTROL_PREFIX = "proxyfleet.control"


def intent_create(provider: str) -> str:
    """Subject of a create intent for one provider instance."""
    return f"{INTENT_PREFIX}.{provider}.create"


def intent_delete(provider: str) -> str:
    """Subject of a delete intent for one provider instance."""
    return f"{INTENT_PREFIX}.{provider}.delete"


def intents_of(provider: str) -> str:
    """Filter subject matching every intent for one provider instance."""
    return f"{INTENT_PREFIX}.{provider}.>"


def provisioner_durable(provider: str) -> str:
    """Durable consumer name shared by all replicas of one provider's provisioner."""
    return f"provisioner-{provider}"


def event_subject(event_type: str) -> str:
    """Subject of an event: `proxy.ready` -> `proxyfleet.events.proxy.ready`."""
    return f"{EVENT_PREFIX}.{event_type}"


def probe_subject(proxy_id: str) -> str:
    """Plain (not persisted) subject carrying every probe result of one proxy."""
    return f"{PROBE_PREFIX}.{proxy_id}"


def resources_request(provider: str) -> str:
    """Request/reply subject: a provisioner answers with its managed resources."""
    return f"{CONTROL_PREFIX}.{provider}.resources"
