"""What every other room uses: the error taxonomy, the injected clock, ids, the common
settings. Pure: no I/O."""
