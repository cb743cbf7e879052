"""cdclake: change-data capture from operational databases into Delta Lake with PySpark."""

from setuptools import find_packages, setup

# Delta 4.1.0 ships its Spark 4.1 build as delta-spark_4.1_2.13; pyspark stays on the 4.1 line.
PYSPARK = "pyspark==4.1.1"
DELTA = "delta-spark==4.1.0"

setup(
    name="cdclake",
    version="0.1.0",
    description="Change-data capture from MySQL/MariaDB, Oracle and Db2 into Delta Lake, as batch Spark jobs",
    package_dir={"": "lib"},
    packages=find_packages("lib"),
    include_package_data=True,
    package_data={"cdclake": ["py.typed", "resources/*.sql", "resources/*.yaml"]},
    python_requires=">=3.10",
    install_requires=[
        PYSPARK,
        DELTA,
        "pymysql>=1.1",
        "mysql-replication==1.0.17",
        "sqlglot>=26,<31",
        "pydantic>=2.6",
        "PyYAML>=6",
        "click>=8.1",
        "pyarrow>=14",
        "pandas>=2.0",
        "orjson>=3.9",
        "oracledb>=2.0",
        "jinja2>=3.1",  # cdclake report (HTML, autoescaped)
        "tqdm>=4.66",  # progress bars of snapshots and backfills in a terminal
    ],
    extras_require={
        "test": ["pytest>=8", "pytest-timeout>=2.3", "ruff>=0.6"],
        "db2": ["ibm-db>=3.2"],
        "quality": ["great-expectations>=1.24,<2"],  # data-quality gates (quality:); 1.24.1 tested
    },
    entry_points={"console_scripts": ["cdclake=cdclake.cli:main"]},
)
