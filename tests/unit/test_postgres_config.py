"""The PostgreSQL source's ``source:`` block and its connections, without a server."""

from __future__ import annotations

import pytest
from cdclake.config import load_config_text
from cdclake.errors import ConfigError
from cdclake.sources.postgresql.connection import PostgresConnector


def _config(extra: str = "") -> object:
    return load_config_text("pipeline: Sales-EU\nsource:\n  type: postgresql\n  host: db\n  database: shop\n"
                            "  user: cdc\n  password: s3cret\n" + extra + "lake: {root: /tmp/lake}\n")


def test_defaults_follow_the_pipeline_name_and_the_kit() -> None:
    source = _config().source  # type: ignore[attr-defined]
    assert (source.port, source.snapshot.partitions, source.connect_timeout) == (5432, 4, 10)
    assert source.slot_name("Sales-EU") == source.publication_name("Sales-EU") == "cdclake_sales_eu"
    assert source.spark_jdbc_url() == "jdbc:postgresql://db:5432/shop"


def test_a_slot_name_postgresql_would_refuse_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="source.slot"):
        _config("  slot: Bad-Name\n")


def test_the_connector_names_the_server_never_the_password() -> None:
    connector = PostgresConnector(_config("  jdbc_options: {ssl: 'true'}\n").source)  # type: ignore[attr-defined]
    assert connector.where() == "db:5432/shop as cdc"
    endpoint = connector.jdbc()
    assert endpoint.properties["password"] == "s3cret" and endpoint.properties["driver"] == "org.postgresql.Driver"
    assert "s3cret" not in repr(endpoint)
    assert "options" in connector.settings() and connector.settings()["dbname"] == "shop"
