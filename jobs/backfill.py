"""spark-submit entry point: `spark-submit jobs/backfill.py --config pipeline.yaml --table db.t [--where SQL]`."""

import sys

from cdclake.cli import cli

if __name__ == "__main__":
    # Empty arguments are what an unset templated option leaves (Airflow): drop them.
    cli(["backfill", *[a for a in sys.argv[1:] if a != ""]], prog_name="cdclake")
