"""Pure logic of the static provisioner (lines, vendor sessions, config, the sync plan): no I/O."""
