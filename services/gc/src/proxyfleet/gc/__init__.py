"""Garbage collector: finds provider resources whose proxy is gone and asks for their delete."""
