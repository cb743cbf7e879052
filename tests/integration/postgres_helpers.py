"""Build pipelines against a throwaway PostgreSQL cluster (:class:`cdclake.testing.postgres.PostgresServer`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.postgres import PostgresServer

from tests.settings import spark_conf_yaml


def postgres_yaml(pg: PostgresServer, lake: Path, name: str = "pgtest", include: str = r"public\..*",
                  source_extra: str = "", extra: str = "") -> str:
    os.environ["CDCLAKE_TEST_PG_PASSWORD"] = pg.passwords[pg.cdc_user]
    return (
        f"pipeline: {name}\n"
        f"source:\n  type: postgresql\n  host: {pg.host}\n  port: {pg.port}\n  database: {pg.database}\n"
        f"  user: {pg.cdc_user}\n  password: ${{CDCLAKE_TEST_PG_PASSWORD}}\n  include_tables: ['{include}']\n"
        f"{source_extra}"
        + spark_conf_yaml() +
        f"lake:\n  root: {lake}\n{extra}"
    )


def postgres_pipeline(spark: Any, pg: PostgresServer, lake: Path, **kw: Any) -> Pipeline:
    return Pipeline.from_config(load_config_text(postgres_yaml(pg, lake, **kw)), spark)
