"""cdclake: change-data capture from operational databases into Delta Lake as batch Spark jobs.

The public API is :class:`cdclake.Pipeline` (:mod:`cdclake.engine.pipeline`), imported on first use
so that ``import cdclake`` stays cheap::

    from cdclake import Pipeline
    pipeline = Pipeline.from_config("conf/pipelines/shop.yaml")
    pipeline.snapshot(); pipeline.mine(); pipeline.status()
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Pipeline", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Pipeline":
        from cdclake.engine.pipeline import Pipeline

        return Pipeline
    raise AttributeError(f"module 'cdclake' has no attribute {name!r}")
