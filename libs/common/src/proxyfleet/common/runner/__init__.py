"""The generic provisioner runner: every provisioner service wires its adapter into it.

- `IntentConsumer`: FastStream pull subscribers on the JetStream durable all replicas
  share; explicit ack, NAK with bounded exponential backoff on temporary provider errors,
  TERM for undecodable intents, `in_progress` heartbeats.
- `IntentHandler`: create/delete intents -> registry transitions, provider calls, events.
- `Reconciler`: republishes intents of proxies stuck pending/provisioning/deleting.
- `Adopter`: marks the installation and registers again resources that outlived a
  store reset (re-adoption).
- `ResourcesResponder`: answers the GC's "which resources do you manage?" requests (a
  FastStream subscriber in the provisioner's queue group).
- `ConnectedNatsBroker`: the FastStream broker both run on, using the process's connection.
- `provisioner_service`: a provisioner declared to the service host (`proxyfleet.common.host`).

What the remote providers (GCP, Kubernetes, KVM) share, imported from their modules:
`blocking.BlockingCalls` runs blocking SDK calls on worker threads, timed, counted and
classified through each provider's `failures.Classifier` into the taxonomy;
`lost_watcher.LostResourceWatcher` fails the proxies whose resource vanished (declared
with `lost_watcher.LostWatch`, run by `provisioner_service`).
"""

from proxyfleet.common.runner.adopter import Adopter
from proxyfleet.common.runner.backoff import backoff_delay
from proxyfleet.common.runner.broker import ConnectedNatsBroker
from proxyfleet.common.runner.consumer import IntentConsumer, consumer_config
from proxyfleet.common.runner.handlers import IntentHandler
from proxyfleet.common.runner.reconciler import Reconciler
from proxyfleet.common.runner.resources import ResourcesResponder
from proxyfleet.common.runner.service import ProvisionerRunner, provisioner_service
from proxyfleet.common.runner.settings import RunnerSettings
from proxyfleet.common.runner.verdict import Delivery, Reply, Verdict

__all__ = [
    "Adopter",
    "ConnectedNatsBroker",
    "Delivery",
    "IntentConsumer",
    "IntentHandler",
    "ProvisionerRunner",
    "Reconciler",
    "Reply",
    "ResourcesResponder",
    "RunnerSettings",
    "Verdict",
    "backoff_delay",
    "consumer_config",
    "provisioner_service",
]
