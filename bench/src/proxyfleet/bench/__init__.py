"""Benchmarks of Proxyfleet's hot paths (`make bench`): figures, targets, baselines."""
