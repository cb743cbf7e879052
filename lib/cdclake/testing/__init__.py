"""Helpers for tests, the demo and benchmarks: throwaway database servers (never a system-wide one)."""
