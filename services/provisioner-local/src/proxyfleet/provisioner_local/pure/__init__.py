"""Pure logic of the local provisioner (its config section, loopback exit addresses): no I/O."""
