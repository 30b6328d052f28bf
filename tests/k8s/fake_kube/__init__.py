"""A fake Kubernetes API server (core/v1 pods, secrets, configmaps, services) with a node
that runs pods for real, for the real `kubernetes` client over http://127.0.0.1:PORT.

    fake = FakeKube().start()
    api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(fake.configuration()))
    ...
    fake.close()

See fake.py for the facade (calls, verbs, objects, inject, quota, drop_watches, compact,
write_kubeconfig, pod_address) and kubelet.py for how pods run (PodMode).
"""

from .fake import FakeKube
from .faults import Call
from .modes import PodMode

__all__ = ["Call", "FakeKube", "PodMode"]
