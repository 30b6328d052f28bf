"""A pod's simulated failures on the fake node (PodMode): an image that cannot be pulled,
a container that keeps crashing or being OOM-killed. Each runs until the pod is stopped."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .objects import Json
from .pod_status import crash_loop_backoff, running, terminated, waiting

if TYPE_CHECKING:
    from .pod_worker import PodWorker


def pull_failure(worker: PodWorker, container: Json, *, backoff: bool) -> None:
    image = container.get("image", "")
    worker.view.state = waiting(
        "ErrImagePull",
        f'failed to pull and unpack image "{image}": failed to resolve reference "{image}": '
        f"{image}: not found",
    )
    worker.push()
    if backoff:
        worker.sleep(worker.kubelet.backoff)
        worker.view.state = waiting("ImagePullBackOff", f'Back-off pulling image "{image}"')
        worker.push()
    worker.sleep(None)


def simulated_crash_loop(worker: PodWorker, *, oom: bool) -> None:
    reason, code = ("OOMKilled", 137) if oom else ("Error", 1)
    never = worker.pod["spec"].get("restartPolicy") == "Never"
    delay = worker.kubelet.backoff
    worker.view.phase = "Running"
    while True:
        started = time.time()
        worker.view.started, worker.view.state = True, running(started)
        worker.push()
        worker.sleep(0.05)
        ended = terminated(reason, code, started, time.time())
        worker.view.started = False
        if never:
            worker.view.phase, worker.view.state = "Failed", ended
            worker.push()
            worker.sleep(None)
        worker.view.last_state = ended
        worker.view.restarts += 1
        if worker.view.restarts >= worker.kubelet.crash_loop_after:
            worker.view.state = crash_loop_backoff(delay, worker.pod)
        worker.push()
        worker.sleep(delay)
        delay = min(delay * 2, worker.kubelet.backoff * 256)
