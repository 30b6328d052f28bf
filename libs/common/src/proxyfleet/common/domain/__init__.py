"""The domain's rules, written once: a proxy's phases and their transitions, exit
addresses, pool specs, adoption after a store reset, API tokens, the Squid config and the
VM user-data. Pure: no I/O."""
