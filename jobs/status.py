"""spark-submit entry point: `spark-submit jobs/status.py --config pipeline.yaml`."""

import sys

from cdclake.cli import cli

if __name__ == "__main__":
    cli(["status", *sys.argv[1:]], prog_name="cdclake")
