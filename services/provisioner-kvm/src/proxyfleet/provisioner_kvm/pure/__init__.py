"""Pure logic of the KVM provisioner (names, XML, cloud-init, seed ISO, addresses): no I/O."""
