"""Everything of the GCP provisioner that does no I/O (no google import): tested directly."""
