"""A fake Kubernetes API server (a test helper) for the real `kubernetes` client over
http://127.0.0.1:PORT, with nodes that run pods for real.

    fake = FakeKube().start()                # or the `fake_kube` fixture (tests/k8s/conftest.py)
    api = client.CoreV1Api(client.ApiClient(fake.configuration()))
    fake.write_kubeconfig(path, namespace="proxies", token=None)   # for load_kube_config
    fake.close()                             # stops every Squid, forwarder and watch

API (core/v1, JSON): pods (+ /status, /log), secrets, configmaps, services under
/api/v1/namespaces/{ns}/..., list and watch across namespaces at /api/v1/{resource};
/api, /api/v1, /apis, /apis/{group}[/{version}], /version for discovery; GET
/api/v1/namespaces/{ns} (every namespace exists); core/v1 events (POST, list). Create
(409 AlreadyExists, 422 Invalid as the server words them, generateName), get, list
(labelSelector: = == != in notin exists !key; fieldSelector: metadata.name,
metadata.namespace, status.phase, spec.nodeName; limit/continue), update (409 on a stale
resourceVersion; pod specs immutable but for images), patch (merge, strategic, JSON patch),
delete (preconditions, gracePeriodSeconds, propagationPolicy Background/Foreground/Orphan,
finalizers and deletionTimestamp), deletecollection. One resourceVersion counter for all
objects. Watches: chunked JSON lines; no version (or "0") starts with ADDED for every
object, a version replays what came after it, a forgotten one (`compact()`) is an ERROR
event with a 410 Expired Status; timeoutSeconds ends a stream cleanly, `drop_watches()`
breaks them; allowWatchBookmarks sends BOOKMARKs every `fake.server.bookmark_interval` s.
The garbage collector deletes objects whose ownerReferences name no live uid
(`fake.gc.pause()` / `resume()`).

CustomResourceDefinitions (crds.py, custom.py, structural.py): a CRD created at
/apis/apiextensions.k8s.io/v1 is Established at once and its namespaced resources are
served under /apis/{group}/{version}/namespaces/{ns}/{plural} (and listed or watched across
namespaces without one), every write pruned and validated against the version's
structural schema (422 with the server's causes; unknown fields dropped with a Warning, or
400 with fieldValidation=Strict), the status subresource (the main resource keeps its
status), metadata.generation raised by spec changes, the scale subresource (autoscaling/v1
Scale over specReplicasPath/statusReplicasPath/labelSelectorPath), merge and JSON patches
(a strategic one is 415), finalizers. `kubectl scale` works against it. Calls are recorded
with their API group (`fake.rbac_calls()`).

Nodes and scheduler (scheduler.py): `FakeKube(nodes=N)` has nodes fake-node, fake-node-2,
... each with a loopback address of its own (`fake.node_address(name)`); each new pod is
bound to the node with the fewest pods that its required pod anti-affinity (over
kubernetes.io/hostname, both ways) and host ports allow, or stays Pending (Unschedulable)
until a pod goes. Kubelet (kubelet.py, pod_worker.py): each pod is run by a thread; one
whose container runs `squid ... -f PATH` waits for its configMap/secret volumes, gets them
as files, its squid.conf rewritten to them and to a loopback pod IP of its own (a
hostNetwork pod: its node's address), its connections to 127/8 sent from its node's
address (the node's SNAT), and a real Squid;
Running, then Ready once the readiness probe's TCP port accepts. `PodMode` simulates
ErrImagePull/ImagePullBackOff, CrashLoopBackOff and OOMKilled; `crash`, `oom`, `evict` act
on a running pod. Services: ClusterIPs on which nothing listens, NodePorts on 127.0.0.1,
LoadBalancer ingress IPs on loopback, both forwarding to a Ready pod.

Faults (recorded in `fake.calls` like every call): `inject(status, ...)`,
`inject_delay(seconds, ...)`, `inject_disconnect(..., after=False)`, `quota(ns, pods=N)`.
"""

from .fake import FakeKube
from .faults import Call
from .modes import PodMode

__all__ = ["Call", "FakeKube", "PodMode"]
