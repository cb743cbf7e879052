"""cdclake: change-data capture from operational databases into Delta Lake with PySpark."""

from pathlib import Path

from setuptools import find_packages, setup

# Delta 4.1.0 ships its Spark 4.1 build as delta-spark_4.1_2.13; pyspark stays on the 4.1 line.
PYSPARK = "pyspark==4.1.1"
DELTA = "delta-spark==4.1.0"
SOURCES = Path(__file__).parent / "lib" / "cdclake" / "sources"


def _requirements(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


# One extra per source plug-in, from its requirements.txt: pip install 'cdclake[mysql]', 'cdclake[oracle]', ...
source_extras = {req.parent.name: _requirements(req) for req in sorted(SOURCES.glob("*/requirements.txt"))}

setup(
    name="cdclake",
    version="0.1.0",
    description="Change-data capture from MySQL/MariaDB, Oracle and Db2 into Delta Lake, as batch Spark jobs",
    package_dir={"": "lib"},
    packages=find_packages("lib"),
    include_package_data=True,
    package_data={"cdclake": ["py.typed", "resources/*.sql", "resources/*.yaml", "sources/*/requirements.txt"]},
    python_requires=">=3.10",
    install_requires=[
        PYSPARK,
        DELTA,
        "pydantic>=2.6",
        "PyYAML>=6",
        "click>=8.1",
        "pyarrow>=14",
        "pandas>=2.0",
        "orjson>=3.9",
        "jinja2>=3.1",  # cdclake report (HTML, autoescaped)
        "tqdm>=4.66",  # progress bars of snapshots and backfills in a terminal
        # delta-rs: status and the idle check of mine read the control tables without Spark (engine.lakeview);
        # the tests also open the lake with it as other readers do. 1.6.6 tested
        "deltalake>=1.6,<2",
    ],
    extras_require={
        **source_extras,
        "sources": sorted({r for reqs in source_extras.values() for r in reqs}),  # every source
        "test": ["pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.6", "ruff>=0.6", "import-linter>=2.13"],
        "quality": ["great-expectations>=1.24,<2"],  # data-quality gates (quality:); 1.24.1 tested
    },
    entry_points={"console_scripts": ["cdclake=cdclake.cli:main"]},
)
