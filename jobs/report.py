"""spark-submit entry point: `spark-submit jobs/report.py --config pipeline.yaml [--out report.html]`."""

import sys

from cdclake.cli import cli

if __name__ == "__main__":
    # Empty arguments are what an unset templated option leaves (Airflow): drop them.
    cli(["report", *[a for a in sys.argv[1:] if a != ""]], prog_name="cdclake")
