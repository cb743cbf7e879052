"""spark-submit entry point: `spark-submit jobs/snapshot.py --config pipeline.yaml`."""

import sys

from cdclake.cli import cli

if __name__ == "__main__":
    cli(["snapshot", *sys.argv[1:]], prog_name="cdclake")
