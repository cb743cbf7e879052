"""The source conformance suite: one logical workload, every source (README.md)."""
