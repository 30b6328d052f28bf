"""Real Squids on loopback addresses of their own, shared by the fakes that "boot" proxies
(tests/gcp/fake_gce for VMs, tests/k8s/fake_kube for pods).

`conf` rewrites a proxy's squid.conf to run on this machine (pure); `host` picks loopback
addresses, hands folders to Squid's user and starts, waits for and stops the processes.
"""
