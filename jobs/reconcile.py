"""spark-submit entry point: `spark-submit jobs/reconcile.py --config pipeline.yaml [--table db.t] [--repair]`."""

import sys

from cdclake.cli import cli

if __name__ == "__main__":
    # Empty arguments are what an unset templated option leaves (Airflow): drop them.
    cli(["reconcile", *[a for a in sys.argv[1:] if a != ""]], prog_name="cdclake")
