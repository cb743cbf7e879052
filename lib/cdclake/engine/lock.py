"""One run per pipeline at a time: an exclusive lock file in the lake (any Hadoop FS).

A lock left by a process that died on this host (kill -9) is taken over; a live holder, or one on
another host, makes the new run fail with :class:`~cdclake.errors.ConcurrentRunError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from cdclake.errors import ConcurrentRunError
from cdclake.hadoopfs import hadoop_fs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def pipeline_lock(spark: SparkSession, path: str, run_id: str) -> Iterator[None]:
    fs, hpath = hadoop_fs(spark, path)
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - pyspark exposes Java I/O only here
    me = {"host": socket.gethostname(), "pid": os.getpid(), "run_id": run_id, "since": time.time()}
    for _ in range(2):
        try:
            out = fs.create(hpath, False)  # fails if the file exists
            out.write(bytearray(json.dumps(me).encode()))
            out.close()
            break
        except Exception as exc:
            holder = _read(fs, hpath, jvm)
            stale = holder.get("host") == me["host"] and not _pid_alive(int(holder.get("pid", -1)))
            if stale or not holder:
                fs.delete(hpath, False)
                continue
            raise ConcurrentRunError(
                f"another run of this pipeline holds the lock {path}: {holder}",
                "wait for it to finish; if it is gone for good, delete the lock file",
            ) from exc
    else:
        raise ConcurrentRunError(f"could not take the lock {path}", "retry the run")
    try:
        yield
    finally:
        fs.delete(hpath, False)


def _read(fs, hpath, jvm) -> dict:  # type: ignore[no-untyped-def]
    try:
        stream = fs.open(hpath)
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream))
        text = reader.readLine()
        reader.close()
        return json.loads(text) if text else {}
    except Exception:
        return {}
