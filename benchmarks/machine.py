"""The machine a benchmark ran on, for its results file: date, CPUs, memory, kernel and package versions."""

from __future__ import annotations

import datetime as dt
import os
import platform
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
