"""Preflight checks against a real throwaway MariaDB 10.11 (plus MySQL-only paths on a scripted fake).

One private server serves the whole module (binlog files rotate at 4 KiB); tests that change global
variables restore them, and tests that purge binlogs compute file names from the server's state.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pymysql
import pytest
from cdclake.errors import PositionLostError, PreflightError
from cdclake.sources.mysql.position import BinlogPosition, file_sequence
from cdclake.sources.mysql.preflight import (
    binlog_end,
    check_binlog_available,
    check_server,
    format_mysql_gtid_set,
    mysql_gtid_subtract,
    parse_grants,
    parse_mariadb_gtid,
    parse_mysql_gtid_set,
)
from cdclake.testing.mariadb import MariaDBServer, ensure_installed
from pymysqlreplication import BinLogStreamReader

CLIENT_ID = 5001

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def server() -> Iterator[MariaDBServer]:
    ensure_installed()
    with MariaDBServer(max_binlog_size=4096) as db:
        db.execute("CREATE DATABASE shop")
        db.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40))")
        yield db


@pytest.fixture
def cdc(server: MariaDBServer) -> Iterator[pymysql.connections.Connection[Any]]:
    conn = server.connect(user=server.cdc_user)
    yield conn
    conn.close()


@contextlib.contextmanager
def global_var(server: MariaDBServer, name: str, value: str) -> Iterator[None]:
    old = server.query(f"SELECT @@GLOBAL.{name}")[0][0]
    server.execute(f"SET GLOBAL {name} = %s", (value,))
    try:
        yield
    finally:
        server.execute(f"SET GLOBAL {name} = %s", (old,))


_next_id = iter(range(1, 10**6))


def write_rows(server: MariaDBServer, n: int = 1) -> None:
    for _ in range(n):
        server.execute("INSERT INTO shop.items VALUES (%s, %s)", (next(_next_id), "x" * 30))


# ---- check_server -------------------------------------------------------------------------------


def test_check_server_accepts_the_cdc_user(server: MariaDBServer, cdc: Any) -> None:
    info = check_server(cdc, CLIENT_ID)
    assert info.flavor == "mariadb"
    assert info.version_tuple[:2] >= (10, 5)
    assert info.server_id == 1
    assert info.server_uuid is None
    assert info.gtid_enabled and info.gtid_mode == "ON"
    assert info.gtid_flags["gtid_domain_id"] == "0"
    assert info.binlog_format == "ROW" and info.binlog_row_image == "FULL"
    assert info.binlog_row_metadata == "FULL"
    assert info.user == "cdc@%"
    assert {"SELECT", "REPLICATION SLAVE", "BINLOG MONITOR"} <= info.privileges
    assert info.binlog_expire_seconds == 0  # never expires on the test server
    # cdc lacks REPLICATION MASTER ADMIN (MariaDB >= 10.5 needs it for SHOW SLAVE HOSTS): said, not hidden
    assert any("REPLICATION MASTER ADMIN" in w for w in info.warnings)


def test_binlog_format_statement_is_rejected(server: MariaDBServer, cdc: Any) -> None:
    with global_var(server, "binlog_format", "STATEMENT"), pytest.raises(PreflightError) as caught:
        check_server(cdc, CLIENT_ID)
    assert "binlog_format is STATEMENT" in caught.value.problem
    assert caught.value.fix is not None
    assert "SET GLOBAL binlog_format='ROW'" in caught.value.fix
    assert "binlog_format=ROW in my.cnf" in caught.value.fix
    check_server(cdc, CLIENT_ID)  # restored -> passes again


def test_binlog_row_image_minimal_is_rejected(server: MariaDBServer, cdc: Any) -> None:
    with global_var(server, "binlog_row_image", "MINIMAL"), pytest.raises(PreflightError) as caught:
        check_server(cdc, CLIENT_ID)
    assert "binlog_row_image is MINIMAL" in caught.value.problem
    assert "SET GLOBAL binlog_row_image='FULL'" in (caught.value.fix or "")


def test_several_problems_are_reported_together(server: MariaDBServer, cdc: Any) -> None:
    with (
        global_var(server, "binlog_format", "MIXED"),
        global_var(server, "binlog_row_image", "NOBLOB"),
        pytest.raises(PreflightError) as caught,
    ):
        check_server(cdc, 1)
    text = str(caught.value)
    assert "3 problems" in text
    assert "binlog_format is MIXED" in text and "binlog_row_image is NOBLOB" in text
    assert "server's own server_id" in text


def test_row_metadata_is_not_a_prerequisite_and_no_library_advice_is_printed(
    server: MariaDBServer, cdc: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Rows are decoded with the schema history, so binlog_row_metadata is neither checked nor advised:
    not by preflight, and not by python-mysql-replication's own warning on every stream."""
    import cdclake.sources.mysql  # noqa: F401 - installs the filter, as every mining run does

    with global_var(server, "binlog_row_metadata", "MINIMAL"):
        info = check_server(cdc, CLIENT_ID)
        reader = BinLogStreamReader(
            connection_settings=server.connection_settings(server.cdc_user), server_id=4243, blocking=False,
        )
        with caplog.at_level("WARNING"):
            try:
                assert reader.fetchone() is not None
            finally:
                reader.close()
    assert info.binlog_row_metadata == "MINIMAL"
    assert not any("row_metadata" in w.lower() for w in info.warnings)
    assert not [r for r in caplog.records if r.name.startswith("pymysqlreplication")], caplog.text


@pytest.mark.parametrize(
    ("grants", "missing"),
    [
        (["SELECT"], "REPLICATION SLAVE, BINLOG MONITOR"),
        (["SELECT", "REPLICATION SLAVE"], "BINLOG MONITOR"),
        (["REPLICATION CLIENT", "SELECT ON shop.*"], "REPLICATION SLAVE"),
        (["SLAVE MONITOR", "RELOAD"], "SELECT, REPLICATION SLAVE, BINLOG MONITOR"),
    ],
)
def test_missing_privileges_name_the_grant(server: MariaDBServer, grants: list[str], missing: str) -> None:
    server.create_user("weak", "weak-pw", grants)
    conn = server.connect(user="weak")
    try:
        with pytest.raises(PreflightError) as caught:
            check_server(conn, CLIENT_ID)
    finally:
        conn.close()
    assert f"lacks the privilege(s) {missing}" in caught.value.problem
    assert f"GRANT {missing} ON *.* TO 'weak'@'%';" in (caught.value.fix or "")


def test_alias_privilege_names_are_accepted(server: MariaDBServer) -> None:
    # REPLICATION REPLICA = REPLICATION SLAVE and REPLICATION CLIENT = BINLOG MONITOR on 10.11
    server.create_user("aliases", "alias-pw", ["SELECT", "REPLICATION REPLICA", "REPLICATION CLIENT"])
    conn = server.connect(user="aliases")
    try:
        info = check_server(conn, CLIENT_ID)
    finally:
        conn.close()
    assert {"REPLICATION SLAVE", "BINLOG MONITOR", "SELECT"} <= info.privileges


def test_all_privileges_is_enough(server: MariaDBServer) -> None:
    conn = server.connect()  # root: GRANT ALL PRIVILEGES ON *.*
    try:
        info = check_server(conn, CLIENT_ID)
    finally:
        conn.close()
    assert "ALL PRIVILEGES" in info.privileges
    assert not any("REPLICATION MASTER ADMIN" in w for w in info.warnings)  # root may list replicas


def test_client_server_id_equal_to_the_servers_is_rejected(cdc: Any) -> None:
    with pytest.raises(PreflightError) as caught:
        check_server(cdc, 1)
    assert caught.value.problem == "source.server_id 1 is the server's own server_id"
    assert "choose another source.server_id" in (caught.value.fix or "")


def test_client_server_id_out_of_range(cdc: Any) -> None:
    with pytest.raises(PreflightError, match="out of range"):
        check_server(cdc, 0)


def _wait_for(predicate: Callable[[], bool], what: str, timeout_polls: int = 200) -> None:
    # Bounded poll for server-side state (not a timing assertion).
    for _ in range(timeout_polls):
        if predicate():
            return
        time.sleep(0.025)
    raise AssertionError(f"timed out waiting for {what}")


def test_server_id_used_by_a_connected_binlog_client(server: MariaDBServer) -> None:
    reader = BinLogStreamReader(
        connection_settings=server.connection_settings(server.cdc_user),
        server_id=4242,
        is_mariadb=True,
        blocking=True,
        report_slave="127.0.0.1",  # registers the id, as a real replica (and cdclake's reader) does
    )
    # Open the dump connection without consuming events (no background thread to stop afterwards).
    reader._BinLogStreamReader__connect_to_stream()  # type: ignore[attr-defined]
    try:
        _wait_for(lambda: any(r[0] == 4242 for r in server.query("SHOW SLAVE HOSTS")), "the replica")
        root = server.connect()
        try:
            with pytest.raises(PreflightError) as caught:
                check_server(root, 4242)
            other = check_server(root, 4243)
        finally:
            root.close()
        assert "source.server_id 4242 is already used by a connected replica" in caught.value.problem
        assert "127.0.0.1" in caught.value.problem
        assert "choose another source.server_id" in (caught.value.fix or "")
        assert [r.server_id for r in other.replicas] == [4242]
        assert len(other.dump_threads) == 1 and other.dump_threads[0].user == server.cdc_user

        # Without REPLICATION MASTER ADMIN the replica list is hidden, but the user's own dump is seen.
        cdc = server.connect(user=server.cdc_user)
        try:
            info = check_server(cdc, 4242)
        finally:
            cdc.close()
        assert len(info.dump_threads) == 1
        assert any("binlog dump connection" in w for w in info.warnings)
    finally:
        reader.close()
        for row in server.query(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'"
        ):
            with contextlib.suppress(pymysql.err.OperationalError):
                server.execute(f"KILL {int(row[0])}")
        _wait_for(lambda: not server.query("SHOW SLAVE HOSTS"), "the replica to go away")


def test_binlog_off_is_rejected() -> None:
    ensure_installed()
    with MariaDBServer(extra_args=["--skip-log-bin"]) as nolog:
        conn = nolog.connect(user=nolog.cdc_user)
        try:
            with pytest.raises(PreflightError) as caught:
                check_server(conn, CLIENT_ID)
            assert "the binary log is off (log_bin=OFF)" in caught.value.problem
            assert "add log_bin=mysql-bin" in (caught.value.fix or "")
            assert "restart the server" in (caught.value.fix or "")
            with pytest.raises(PreflightError, match="binary log is off"):
                binlog_end(conn)
            with pytest.raises(PreflightError, match="binary log is off"):
                check_binlog_available(conn, BinlogPosition("mysql-bin.000001", 4), "mariadb")
        finally:
            conn.close()


# ---- binlog_end / check_binlog_available ----------------------------------------------------------


def test_binlog_end_matches_the_server(server: MariaDBServer, cdc: Any) -> None:
    write_rows(server)
    end = binlog_end(cdc)
    assert (end.file, end.pos) == server.current_binlog()
    assert end.gtid == server.gtid_binlog_pos()
    write_rows(server)
    later = binlog_end(cdc, "mariadb")
    assert later > end
    assert parse_mariadb_gtid(later.gtid)[0][1] == parse_mariadb_gtid(end.gtid)[0][1] + 1
    check_binlog_available(cdc, later, "mariadb")
    check_binlog_available(cdc, later, "mariadb", resume_by="gtid")


def test_purged_binlog_is_reported_with_the_missing_range(server: MariaDBServer, cdc: Any) -> None:
    write_rows(server)
    stored = binlog_end(cdc)
    write_rows(server)
    server.flush_logs()
    write_rows(server)
    server.flush_logs()
    keep = server.flush_logs()
    write_rows(server)
    check_binlog_available(cdc, stored, "mariadb")  # still there before the purge
    server.purge_logs_to(keep)
    assert server.binlog_files()[0][0] == keep

    with pytest.raises(PositionLostError) as caught:
        check_binlog_available(cdc, stored, "mariadb")
    last_purged = f"mysql-bin.{file_sequence(keep) - 1:06d}"
    assert caught.value.problem == (
        f"binlog {stored.file}:{stored.pos} is no longer on the server: the oldest binlog is {keep} "
        f"(files {stored.file}..{last_purged} were purged)"
    )
    fix = caught.value.fix or ""
    assert "`cdclake snapshot --force`" in fix
    assert "binlog_expire_logs_seconds" in fix and "expire_logs_days" in fix

    # The same position resumed by GTID is gone too: the transactions after it were purged.
    with pytest.raises(PositionLostError) as by_gtid:
        check_binlog_available(cdc, stored, "mariadb", resume_by="gtid")
    _, seq = parse_mariadb_gtid(stored.gtid)[0]
    assert f"transactions 0-*-{seq + 1}.." in by_gtid.value.problem
    assert f"the oldest binlog {keep}" in by_gtid.value.problem
    assert "`cdclake snapshot --force`" in (by_gtid.value.fix or "")

    # What is still on the server passes.
    check_binlog_available(cdc, binlog_end(cdc), "mariadb", resume_by="gtid")


def test_offset_past_the_end_of_the_file(server: MariaDBServer, cdc: Any) -> None:
    file, size = server.binlog_files()[-1]
    with pytest.raises(
        PositionLostError, match=rf"binlog {re.escape(file)}:{size + 1000} is outside that file"
    ):
        check_binlog_available(cdc, BinlogPosition(file, size + 1000), "mariadb")


def test_file_ahead_of_the_server_or_other_basename(server: MariaDBServer, cdc: Any) -> None:
    newest = server.binlog_files()[-1][0]
    ahead = f"mysql-bin.{file_sequence(newest) + 5:06d}"
    with pytest.raises(PositionLostError, match="is ahead of the server"):
        check_binlog_available(cdc, BinlogPosition(ahead, 4), "mariadb")
    with pytest.raises(PositionLostError, match=r"its binlogs are named mysql-bin\.\*"):
        check_binlog_available(cdc, BinlogPosition("mariadb-bin.000001", 4), "mariadb")


def test_gtid_ahead_or_unknown_domain(server: MariaDBServer, cdc: Any) -> None:
    file, pos = server.current_binlog()
    with pytest.raises(PositionLostError, match="is ahead of the server"):
        check_binlog_available(cdc, BinlogPosition(file, pos, "0-1-999999"), "mariadb")
    here = server.gtid_binlog_pos()
    with pytest.raises(PositionLostError, match="no transactions of domain 7"):
        check_binlog_available(cdc, BinlogPosition(file, pos, f"{here},7-1-3"), "mariadb", resume_by="gtid")
    with pytest.raises(PositionLostError, match="has no GTID"):
        check_binlog_available(cdc, BinlogPosition(file, pos), "mariadb", resume_by="gtid")


def test_purged_transactions_of_a_domain_the_position_never_saw(server: MariaDBServer, cdc: Any) -> None:
    write_rows(server)
    stored = binlog_end(cdc)
    assert set(parse_mariadb_gtid(stored.gtid)) == {0}
    other = server.connect()  # gtid_domain_id is a session setting: keep it off the shared connection
    try:
        with other.cursor() as cur:
            cur.execute("SET SESSION gtid_domain_id = 5")
            cur.execute("INSERT INTO shop.items VALUES (%s, 'domain 5')", (next(_next_id),))
    finally:
        other.close()
    keep = server.flush_logs()
    server.purge_logs_to(keep)
    with pytest.raises(PositionLostError) as caught:
        check_binlog_available(cdc, stored, "mariadb", resume_by="gtid")
    assert "transactions 5-*-1..5-1-1 of domain 5, which the position has never seen," in caught.value.problem


# ---- pure helpers and MySQL-only paths (scripted connection) --------------------------------------


def test_parse_grants_handles_aliases_columns_and_roles() -> None:
    privs, partial = parse_grants(
        [
            "GRANT SELECT (a, b), REPLICATION REPLICA, REPLICATION CLIENT ON *.* TO `u`@`%`",
            "GRANT ALL PRIVILEGES ON `shop`.* TO `u`@`%`",
            "GRANT `reader` TO `u`@`%`",
            "GRANT EXECUTE ON PROCEDURE `shop`.`p` TO `u`@`%`",
        ]
    )
    assert privs == {"SELECT", "REPLICATION SLAVE", "BINLOG MONITOR"}
    assert partial == {"ALL PRIVILEGES", "EXECUTE"}


def test_mysql_gtid_set_arithmetic() -> None:
    a = parse_mysql_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-20:25,\n aaaa:tag1:1-3")
    b = parse_mysql_gtid_set("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10:12")
    assert format_mysql_gtid_set(mysql_gtid_subtract(a, b)) == (
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:11:13-20:25,aaaa:tag1:1-3"
    )
    assert mysql_gtid_subtract(b, a) == {}


class _ScriptedCursor:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.description: list[tuple[str]] | None = None
        self._rows: list[tuple[Any, ...]] = []

    def __enter__(self) -> _ScriptedCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute(self, sql: str, params: Any = None) -> int:
        for prefix, answer in self.answers.items():
            if sql.startswith(prefix):
                if isinstance(answer, Exception):
                    raise answer
                columns, rows = answer
                self.description = [(c,) for c in columns]
                self._rows = rows
                return len(rows)
        raise AssertionError(f"unexpected SQL: {sql}")

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows


class _ScriptedConnection:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def cursor(self) -> _ScriptedCursor:
        return _ScriptedCursor(self.answers)


UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _mysql84(**overrides: str) -> _ScriptedConnection:
    variables = {
        "version": "8.4.3",
        "server_id": "7",
        "server_uuid": UUID,
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_value_options": "",
        "binlog_row_metadata": "FULL",
        "binlog_expire_logs_seconds": "2592000",
        "gtid_mode": "ON",
        "enforce_gtid_consistency": "ON",
    }
    variables.update(overrides)
    status_cols = ["File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set"]
    return _ScriptedConnection(
        {
            "SHOW GLOBAL VARIABLES": (["Variable_name", "Value"], list(variables.items())),
            "SELECT CURRENT_USER()": (["u"], [("cdc@%",)]),
            "SELECT CURRENT_ROLE()": (["r"], [("NONE",)]),
            "SHOW GRANTS": (
                ["g"],
                [("GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",)],
            ),
            "SHOW REPLICAS": (["Server_Id", "Host", "Port", "Source_Id", "Replica_UUID"], []),
            "SELECT ID, USER, HOST FROM information_schema.PROCESSLIST": (["ID", "USER", "HOST"], []),
            "SHOW BINARY LOG STATUS": (status_cols, [("binlog.000012", 157, "", "", f"{UUID}:1-30,\n")]),
            "SHOW BINARY LOGS": (
                ["Log_name", "File_size"],
                [("binlog.000011", 5000), ("binlog.000012", 157)],
            ),
            "SELECT @@GLOBAL.gtid_purged": (["p"], [(f"{UUID}:1-20",)]),
            "SELECT @@GLOBAL.gtid_executed": (["e"], [(f"{UUID}:1-30",)]),
        }
    )


def test_mysql_server_checks() -> None:
    info = check_server(_mysql84(), CLIENT_ID)
    assert (info.flavor, info.server_uuid, info.gtid_mode) == ("mysql", UUID, "ON")
    assert info.binlog_expire_seconds == 2592000
    with pytest.raises(PreflightError) as caught:
        check_server(_mysql84(binlog_row_value_options="PARTIAL_JSON"), CLIENT_ID)
    assert "PARTIAL_JSON" in caught.value.problem
    assert "SET GLOBAL binlog_row_value_options=''" in (caught.value.fix or "")


def test_mysql_binlog_end_and_gtid_purge() -> None:
    conn = _mysql84()
    end = binlog_end(conn, "mysql")
    assert end == BinlogPosition("binlog.000012", 157, f"{UUID}:1-30")
    check_binlog_available(conn, end, "mysql")
    with pytest.raises(PositionLostError) as caught:
        check_binlog_available(conn, BinlogPosition("binlog.000012", 4, f"{UUID}:1-10"), "mysql")
    assert f"transactions {UUID}:11-20 that it has not read were purged" in caught.value.problem
    with pytest.raises(PositionLostError, match="is ahead of the server: it never executed"):
        check_binlog_available(conn, BinlogPosition("binlog.000012", 4, f"{UUID}:1-40"), "mysql")


def test_mysql_80_falls_back_to_show_master_status() -> None:
    conn = _mysql84()
    conn.answers["SHOW BINARY LOG STATUS"] = pymysql.err.ProgrammingError(1064, "syntax")
    conn.answers["SHOW MASTER STATUS"] = (["File", "Position"], [("binlog.000012", 157)])
    assert binlog_end(conn, "mysql") == BinlogPosition("binlog.000012", 157, f"{UUID}:1-30")


# ---- the throwaway server and the shared fixtures -------------------------------------------------


def test_session_server_and_fresh_database(mariadb: MariaDBServer, fresh_database: str) -> None:
    mariadb.execute(f"CREATE TABLE `{fresh_database}`.t (id INT PRIMARY KEY, s VARCHAR(10))")
    mariadb.execute(f"INSERT INTO `{fresh_database}`.t VALUES (1, 'é')")
    conn = mariadb.connect(user=mariadb.cdc_user, database=fresh_database)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT s FROM t")
            assert cur.fetchall() == (("é",),)
            cur.execute(
                "SELECT @@binlog_format, @@binlog_row_image, @@time_zone, @@character_set_server, "
                "@@log_slave_updates, @@server_id, @@log_bin"
            )
            assert cur.fetchone() == ("ROW", "FULL", "+00:00", "utf8mb4", 1, 1, 1)
    finally:
        conn.close()
    assert fresh_database in {row[0] for row in mariadb.query("SHOW DATABASES")}


def test_private_server_stops_and_cleans_up(private_mariadb: MariaDBServer) -> None:
    assert private_mariadb.startup_seconds is not None and private_mariadb.running
    first = private_mariadb.current_binlog()[0]
    assert private_mariadb.flush_logs() == f"mysql-bin.{file_sequence(first) + 1:06d}"
    datadir = private_mariadb.datadir
    assert (datadir / first).exists()
    private_mariadb.stop()
    assert not private_mariadb.running and not datadir.exists()
    private_mariadb.stop()  # idempotent (the fixture stops it again)


def test_start_failure_surfaces_the_error_log() -> None:
    from cdclake.testing.mariadb import MariaDBStartError

    ensure_installed()
    server = MariaDBServer(extra_args=["--no-such-option-for-cdclake"])
    with pytest.raises(MariaDBStartError, match="no-such-option-for-cdclake") as caught:
        server.start()
    assert "exited with code" in str(caught.value)
    assert server.dir is None and not server.running  # temp dir removed after the failed start


def test_ensure_installed_names_make_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    import cdclake.testing.mariadb as module

    monkeypatch.setattr(module, "_find", lambda name: None)
    with pytest.raises(module.MariaDBNotInstalledError) as caught:
        module.ensure_installed()
    assert "mariadbd" in caught.value.problem
    assert "make setup" in (caught.value.fix or "")
