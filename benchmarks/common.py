"""What the benchmark scripts share: the machine facts of a results file (date, CPUs, memory, kernel, package
versions), and timing."""

from __future__ import annotations

import datetime as dt
import os
import platform
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _proc_line(path: str, prefix: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def machine_facts(*packages: str) -> dict[str, object]:
    """Date (UTC), CPUs, memory, kernel, Python, pyspark and delta-spark, and the versions of ``packages``."""
    mem = _proc_line("/proc/meminfo", "MemTotal:")
    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "nproc": os.cpu_count(),
        "mem_gib": round(int(mem.split()[0]) / 1024 / 1024, 1) if mem else None,
        "cpu_model": _proc_line("/proc/cpuinfo", "model name") or "unknown",
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyspark": package_version("pyspark"),
        "delta_spark": package_version("delta-spark"),
        **{name.replace("-", "_"): package_version(name) for name in packages},
    }


def timed(fn):  # type: ignore[no-untyped-def]
    """``(fn(), seconds it took)``."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def rate(n: float, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else float("nan")
