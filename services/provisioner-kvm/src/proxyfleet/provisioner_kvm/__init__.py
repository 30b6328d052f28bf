"""proxyfleet-provisioner-kvm: proxies as VMs on libvirt hosts reached over SSH."""
