"""Pure logic of the Kubernetes provisioner: names, manifests, classification. No I/O."""
