"""spark-submit entry point: `spark-submit jobs/mine.py --config pipeline.yaml`."""

import sys

from cdclake.cli import cli

if __name__ == "__main__":
    cli(["mine", *sys.argv[1:]], prog_name="cdclake")
