"""cdclake: change-data capture from operational databases into Delta Lake as batch Spark jobs."""

__version__ = "0.1.0"
