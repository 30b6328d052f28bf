"""How the fake kubelet runs a pod (`Kubelet.set_mode`)."""

from __future__ import annotations

import enum


class PodMode(enum.Enum):
    RUN = "run"
    """Run the pod (a real Squid when its command is one)."""
    IMAGE_PULL_BACKOFF = "image_pull_backoff"
    """Pending: waiting ErrImagePull, then ImagePullBackOff."""
    ERR_IMAGE_PULL = "err_image_pull"
    """Pending: waiting ErrImagePull, and it stays so."""
    CRASH_LOOP = "crash_loop"
    """The container exits with 1 each time it starts: restarts, then CrashLoopBackOff."""
    OOM_KILLED = "oom_killed"
    """The container is OOM-killed (137) each time it starts: restarts, then CrashLoopBackOff."""
