"""The coordination ports kept in one process (`coordination.LocalPins`, `LocalUploads`):
a pin lasts its ttl by the injected clock, never longer, and is dropped on demand."""

from __future__ import annotations

from proxyfleet.common.core.clock import ManualClock
from proxyfleet.provisioner_kvm.coordination import LocalPins, LocalUploads


async def test_a_pin_is_kept_for_its_ttl_and_replaced_by_a_later_one() -> None:
    clock = ManualClock()
    pins = LocalPins(clock, ttl=60)
    await pins.put("p1", "hv1")
    clock.advance(59.9)
    assert await pins.get("p1") == "hv1"
    await pins.put("p1", "hv2")  # a later attempt built there: the ttl starts again
    clock.advance(59.9)
    assert await pins.get("p1") == "hv2"
    clock.advance(0.1)
    assert await pins.get("p1") is None
    assert await pins.get("p2") is None


async def test_a_pin_never_outlasts_its_ttl_when_the_clock_goes_back() -> None:
    clock = ManualClock()
    pins = LocalPins(clock, ttl=60)
    await pins.put("p1", "hv1")
    clock.advance(-0.1)
    assert await pins.get("p1") is None


async def test_a_dropped_pin_is_gone() -> None:
    pins = LocalPins(ManualClock())
    await pins.put("p1", "hv1")
    await pins.put("p2", "hv2")
    await pins.drop("p1")
    await pins.drop("p1")
    assert (await pins.get("p1"), await pins.get("p2")) == (None, "hv2")


async def test_local_uploads_hold_nothing_beyond_the_process() -> None:
    uploads = LocalUploads()
    async with uploads.hold("hv1", "base"), uploads.hold("hv1", "base") as fence:
        await fence()  # never fails: nobody else can take it
