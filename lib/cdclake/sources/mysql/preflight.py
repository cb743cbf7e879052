"""Checks that a MySQL/MariaDB server can be captured, and that a stored position is still readable.

Run at the start of every job, not once (docs/reference mysql.md J, Part 4 items 10, 11, 13): a DBA
can switch ``binlog_format`` or purge binlogs between two runs. Every failure is a
:class:`~cdclake.errors.PreflightError` / :class:`~cdclake.errors.PositionLostError` that names the
exact statement or setting that fixes it; nothing is skipped silently.

* :func:`check_server` — binlog on, ROW format, FULL row images, no PARTIAL_JSON, privileges, and a
  ``server_id`` for our binlog client that nobody else uses;
* :func:`check_binlog_available` — the stored file/offset (and GTID position) is still on the server;
* :func:`binlog_end` — the current end of the binary log as a :class:`BinlogPosition`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from cdclake.errors import PositionLostError, PreflightError
from cdclake.sources.mysql.position import BinlogPosition, file_sequence

Flavor = Literal["mariadb", "mysql"]

RESNAPSHOT_FIX = (
    "re-snapshot the pipeline's tables: `cdclake snapshot --force`; to keep it from happening again, "
    "raise the binlog retention on the server (binlog_expire_logs_seconds, or expire_logs_days on "
    "older servers) above the longest gap between two runs"
)

_ER_ACCESS_DENIED = {1142, 1227, 1045, 1044}  # table/specific/global access denied
_ER_PARSE = 1064
_ER_NO_BINARY_LOGGING = 1381

_VARIABLES = (
    "version",
    "version_comment",
    "server_id",
    "server_uuid",
    "log_bin",
    "log_bin_basename",
    "binlog_format",
    "binlog_row_image",
    "binlog_row_value_options",
    "binlog_row_metadata",
    "binlog_expire_logs_seconds",
    "expire_logs_days",
    "gtid_mode",
    "enforce_gtid_consistency",
    "gtid_strict_mode",
    "gtid_domain_id",
    "gtid_binlog_pos",
    "gtid_executed",
    "gtid_purged",
)


class Replica(NamedTuple):
    """A binlog client the server knows the ``server_id`` of (``SHOW SLAVE HOSTS`` / ``SHOW REPLICAS``)."""

    server_id: int
    host: str
    port: int


class DumpThread(NamedTuple):
    """A connection streaming the binlog (processlist ``Binlog Dump``); its server_id is not shown."""

    id: int
    user: str
    host: str


@dataclass(frozen=True)
class ServerInfo:
    flavor: Flavor
    version: str  # full VERSION(), e.g. "10.11.19-MariaDB-0+deb12u1-log"
    version_tuple: tuple[int, int, int]
    server_id: int
    server_uuid: str | None  # MySQL only
    gtid_mode: str | None  # MySQL gtid_mode (OFF/ON/...); "ON" on MariaDB, where GTIDs are always on
    gtid_flags: Mapping[
        str, str
    ]  # enforce_gtid_consistency (MySQL), gtid_strict_mode/gtid_domain_id (MariaDB)
    binlog_row_metadata: str | None  # MINIMAL/FULL (MySQL >= 8.0.14), NO_LOG/MINIMAL/FULL (MariaDB >= 10.5)
    binlog_format: str
    binlog_row_image: str
    log_bin_basename: str | None
    binlog_expire_seconds: int | None  # 0 = never expire; None = unknown
    user: str  # CURRENT_USER(), e.g. "cdc@%"
    privileges: frozenset[str]  # canonical names of the global privileges held
    replicas: tuple[Replica, ...] = ()
    dump_threads: tuple[DumpThread, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def gtid_enabled(self) -> bool:
        return self.flavor == "mariadb" or (self.gtid_mode or "").upper() == "ON"


# ---- helpers ---------------------------------------------------------------------------------------


def _rows(conn: Any, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return [tuple(row) for row in cur.fetchall()]


def _dict_rows(conn: Any, sql: str) -> list[dict[str, Any]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0].lower() for d in cur.description or ()]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def _errno(err: BaseException) -> int | None:
    args = getattr(err, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _global_variables(conn: Any) -> dict[str, str]:
    # SHOW GLOBAL VARIABLES ... IN (...) tolerates names the server does not have (MySQL-only or
    # MariaDB-only variables), unlike SELECT @@GLOBAL.x.
    placeholders = ", ".join(["%s"] * len(_VARIABLES))
    rows = _rows(conn, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", _VARIABLES)
    return {_text(name).lower(): _text(value) for name, value in rows}


def detect_flavor(conn: Any) -> Flavor:
    version = _text(_rows(conn, "SELECT VERSION()")[0][0])
    return "mariadb" if "mariadb" in version.lower() else "mysql"


def _version_tuple(version: str) -> tuple[int, int, int]:
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    if not match:
        return (0, 0, 0)
    major, minor, patch = (int(g) for g in match.groups())
    return (major, minor, patch)


def _is_on(value: str | None) -> bool:
    return (value or "").strip().upper() in {"ON", "1", "YES", "TRUE"}


def _quote_account(account: str) -> str:
    user, _, host = account.rpartition("@") if "@" in account else (account, "", "%")
    return f"'{user}'@'{host}'"


# ---- privileges ------------------------------------------------------------------------------------

_GRANT_LINE = re.compile(
    r"^GRANT\s+(?P<privs>.+?)\s+ON\s+(?:(?:FUNCTION|PROCEDURE|PACKAGE\s+BODY|PACKAGE)\s+)?"
    r"(?P<object>\S+)\s+TO\s+",
    re.IGNORECASE | re.DOTALL,
)
# Synonyms folded onto one canonical name. MariaDB >= 10.5 shows REPLICATION CLIENT as BINLOG
# MONITOR; MySQL 8.0.22+/MariaDB 10.5+ accept REPLICATION REPLICA and REPLICA MONITOR.
_ALIASES = {
    "REPLICATION REPLICA": "REPLICATION SLAVE",
    "REPLICATION CLIENT": "BINLOG MONITOR",
    "REPLICA MONITOR": "SLAVE MONITOR",
    "ALL": "ALL PRIVILEGES",
}


def _split_privileges(text: str) -> list[str]:
    """``SELECT (a, b), INSERT`` -> ``["SELECT", "INSERT"]`` (column lists dropped)."""
    out, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            out.append("".join(current))
            current = []
            continue
        elif depth == 0:
            current.append(char)
    out.append("".join(current))
    return [" ".join(p.split()).upper() for p in out if p.strip()]


def parse_grants(lines: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """``SHOW GRANTS`` lines -> (canonical global privileges, privileges held on some db/table only)."""
    global_privs: set[str] = set()
    partial: set[str] = set()
    for line in lines:
        match = _GRANT_LINE.match(line.strip())
        if not match:  # role grants ("GRANT `r` TO `u`"), SET DEFAULT ROLE, PROXY-less lines...
            continue
        privs = {_ALIASES.get(p, p) for p in _split_privileges(match.group("privs"))}
        target = global_privs if match.group("object") == "*.*" else partial
        target.update(privs)
    return frozenset(global_privs), frozenset(partial)


def _current_grants(conn: Any, flavor: Flavor) -> list[str]:
    lines = [_text(row[0]) for row in _rows(conn, "SHOW GRANTS")]
    if flavor == "mysql":
        # MySQL lists active roles as "GRANT `r`@`%` TO ..." without their privileges: expand them.
        try:
            roles = _text(_rows(conn, "SELECT CURRENT_ROLE()")[0][0])
        except Exception:
            roles = "NONE"
        if roles and roles.upper() != "NONE":
            lines += [_text(row[0]) for row in _rows(conn, f"SHOW GRANTS FOR CURRENT_USER() USING {roles}")]
    return lines


# ---- the server check --------------------------------------------------------------------------------


def _replicas(conn: Any, flavor: Flavor) -> tuple[list[Replica], str | None]:
    """Registered replicas, or a warning when the user may not list them."""
    statements = ["SHOW SLAVE HOSTS"] if flavor == "mariadb" else ["SHOW REPLICAS", "SHOW SLAVE HOSTS"]
    last: Exception | None = None
    for sql in statements:
        try:
            rows = _dict_rows(conn, sql)
        except Exception as err:
            last = err
            if _errno(err) in _ER_ACCESS_DENIED:
                break
            continue
        return [
            Replica(int(r["server_id"]), _text(r.get("host") or ""), int(r.get("port") or 0)) for r in rows
        ], None
    need = "REPLICATION MASTER ADMIN" if flavor == "mariadb" else "REPLICATION SLAVE"
    return [], (
        f"could not list registered replicas ({last}); grant {need} to let the server_id check see them"
    )


def _dump_threads(conn: Any) -> list[DumpThread]:
    # Without PROCESS a user sees only its own threads, which still catches a second cdclake run
    # with the same account.
    rows = _rows(
        conn,
        "SELECT ID, USER, HOST FROM information_schema.PROCESSLIST "
        "WHERE COMMAND LIKE 'Binlog Dump%' AND ID <> CONNECTION_ID()",
    )
    return [DumpThread(int(i), _text(u), _text(h)) for i, u, h in rows]


def check_server(conn: Any, client_server_id: int) -> ServerInfo:
    """Validate the server and account for binlog capture; raise one PreflightError listing every problem.

    ``client_server_id`` is the ``source.server_id`` our binlog client will use.
    """
    variables = _global_variables(conn)
    version = variables.get("version") or _text(_rows(conn, "SELECT VERSION()")[0][0])
    flavor: Flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
    server_id = int(variables.get("server_id") or 0)
    issues: list[tuple[str, str]] = []
    warnings: list[str] = []
    cnf = "the [mariadb] section of my.cnf" if flavor == "mariadb" else "the [mysqld] section of my.cnf"

    # -- binary log settings ------------------------------------------------------------------------
    if not _is_on(variables.get("log_bin")):
        issues.append(
            (
                "the binary log is off (log_bin=OFF), so there are no changes to capture",
                f"add log_bin=mysql-bin and server_id=<unique number> to {cnf} and restart the server "
                "(log_bin cannot be changed at runtime; on MySQL 8 remove skip-log-bin/disable-log-bin; "
                "on Amazon RDS enable automated backups)",
            )
        )
    binlog_format = (variables.get("binlog_format") or "").upper()
    if binlog_format != "ROW":
        issues.append(
            (
                f"binlog_format is {binlog_format or 'unknown'}, but row-based logging is required",
                "SET GLOBAL binlog_format='ROW' and set binlog_format=ROW in my.cnf so it survives a "
                "restart (sessions that are already connected keep the old format until they reconnect)",
            )
        )
    row_image = (variables.get("binlog_row_image") or "").upper()
    if row_image != "FULL":
        issues.append(
            (
                f"binlog_row_image is {row_image or 'unknown'}, so updates and deletes would miss columns",
                "SET GLOBAL binlog_row_image='FULL' and set binlog_row_image=FULL in my.cnf",
            )
        )
    row_value_options = (variables.get("binlog_row_value_options") or "").upper()  # MySQL only
    if "PARTIAL_JSON" in row_value_options:
        issues.append(
            (
                "binlog_row_value_options is PARTIAL_JSON, so JSON updates are logged as partial diffs",
                "SET GLOBAL binlog_row_value_options='' and remove binlog_row_value_options=PARTIAL_JSON "
                "from my.cnf",
            )
        )
    if server_id == 0:
        issues.append(
            (
                "the server's server_id is 0, so it refuses binlog clients",
                f"SET GLOBAL server_id=<unique number> and set server_id in {cnf}",
            )
        )

    # -- privileges ---------------------------------------------------------------------------------
    account = _text(_rows(conn, "SELECT CURRENT_USER()")[0][0])
    global_privs, partial_privs = parse_grants(_current_grants(conn, flavor))
    monitor = "BINLOG MONITOR" if flavor == "mariadb" and _version_tuple(version) >= (10, 5, 2) else None
    monitor = monitor or "REPLICATION CLIENT"
    if "ALL PRIVILEGES" in global_privs:
        held = frozenset({"SELECT", "REPLICATION SLAVE", "BINLOG MONITOR"}) | global_privs
    else:
        held = global_privs
    missing = []
    if "SELECT" not in held:
        if "SELECT" in partial_privs or "ALL PRIVILEGES" in partial_privs:
            warnings.append(
                f"{account} has SELECT only on some databases/tables; snapshots of others will fail"
            )
        else:
            missing.append("SELECT")
    if "REPLICATION SLAVE" not in held:
        missing.append("REPLICATION SLAVE")
    if "BINLOG MONITOR" not in held:
        missing.append(monitor)
    if missing:
        issues.append(
            (
                f"the user {account} lacks the privilege(s) {', '.join(missing)} needed to read the "
                "binary log",
                f"GRANT {', '.join(missing)} ON *.* TO {_quote_account(account)}; (run as an admin)",
            )
        )

    # -- our binlog client's server_id --------------------------------------------------------------
    if not 1 <= client_server_id <= 2**32 - 1:
        issues.append(
            (
                f"source.server_id {client_server_id} is out of range",
                "choose a source.server_id between 1 and 4294967295 that no server or replica uses",
            )
        )
    elif client_server_id == server_id:
        issues.append(
            (
                f"source.server_id {client_server_id} is the server's own server_id",
                "choose another source.server_id in the pipeline file: one that no server or replica "
                "in the replication topology uses",
            )
        )
    replicas, replica_warning = _replicas(conn, flavor)
    if replica_warning:
        warnings.append(replica_warning)
    clash = [r for r in replicas if r.server_id == client_server_id]
    if clash:
        who = ", ".join(f"{r.host or '?'}:{r.port}" for r in clash)
        issues.append(
            (
                f"source.server_id {client_server_id} is already used by a connected replica/binlog "
                f"client ({who}); two clients with one server_id disconnect each other",
                "choose another source.server_id in the pipeline file (one per concurrently running "
                "pipeline), or stop the other client",
            )
        )
    dumps = _dump_threads(conn)
    if len(dumps) > len(replicas):
        # Clients that never sent COM_REGISTER_SLAVE (pymysqlreplication without report_slave) are
        # invisible to SHOW SLAVE HOSTS, so their server_id cannot be compared.
        warnings.append(
            f"{len(dumps)} binlog dump connection(s) are open (processlist ids "
            f"{', '.join(str(d.id) for d in dumps)}) but only {len(replicas)} registered server_id(s) "
            "are visible; a server_id clash with the others cannot be checked"
        )

    # binlog_row_metadata is not checked: rows are decoded with the schema history's columns, never
    # the binlog's optional metadata.

    if issues:
        raise _combined(issues)

    expire = _expire_seconds(variables)
    if flavor == "mysql":
        gtid_mode: str | None = variables.get("gtid_mode")
        flags = {k: variables[k] for k in ("enforce_gtid_consistency",) if k in variables}
    else:
        gtid_mode = "ON"
        flags = {k: variables[k] for k in ("gtid_strict_mode", "gtid_domain_id") if k in variables}
    return ServerInfo(
        flavor=flavor,
        version=version,
        version_tuple=_version_tuple(version),
        server_id=server_id,
        server_uuid=variables.get("server_uuid") if flavor == "mysql" else None,
        gtid_mode=gtid_mode,
        gtid_flags=flags,
        binlog_row_metadata=variables.get("binlog_row_metadata"),
        binlog_format=binlog_format,
        binlog_row_image=row_image,
        log_bin_basename=variables.get("log_bin_basename") or None,
        binlog_expire_seconds=expire,
        user=account,
        privileges=held,
        replicas=tuple(replicas),
        dump_threads=tuple(dumps),
        warnings=tuple(warnings),
    )


def _expire_seconds(variables: Mapping[str, str]) -> int | None:
    seconds = variables.get("binlog_expire_logs_seconds")
    if seconds not in (None, "", "0"):
        return int(float(seconds))
    days = variables.get("expire_logs_days")
    if days not in (None, ""):
        return int(float(days) * 86400)
    return 0 if seconds == "0" else None


def _combined(issues: Sequence[tuple[str, str]]) -> PreflightError:
    if len(issues) == 1:
        return PreflightError(*issues[0])
    problem = f"{len(issues)} problems with the source server:\n" + "\n".join(
        f"    {n}. {p}" for n, (p, _) in enumerate(issues, 1)
    )
    fix = "\n".join(f"    {n}. {f}" for n, (_, f) in enumerate(issues, 1))
    err = PreflightError(problem, "\n" + fix)
    err.issues = list(issues)  # type: ignore[attr-defined]
    return err


# ---- binlog end ----------------------------------------------------------------------------------


def _status_row(conn: Any, flavor: Flavor) -> dict[str, Any]:
    # MySQL 8.2+ renamed SHOW MASTER STATUS (removed in 8.4); MariaDB keeps it (alias SHOW BINLOG STATUS).
    statements = (
        ["SHOW MASTER STATUS"] if flavor == "mariadb" else ["SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"]
    )
    last: Exception | None = None
    for sql in statements:
        try:
            rows = _dict_rows(conn, sql)
        except Exception as err:
            if _errno(err) == _ER_PARSE:
                last = err
                continue
            if _errno(err) in _ER_ACCESS_DENIED:
                raise _privilege_error(conn, flavor, err) from err
            raise
        if not rows:
            raise PreflightError(
                "the binary log is off on the source server (SHOW MASTER STATUS is empty)",
                "add log_bin=mysql-bin and server_id=<unique number> to my.cnf and restart the server",
            )
        return rows[0]
    raise PreflightError(f"could not read the binlog end position: {last}", "check the server version")


def _privilege_error(conn: Any, flavor: Flavor, err: Exception) -> PreflightError:
    account = _text(_rows(conn, "SELECT CURRENT_USER()")[0][0])
    monitor = "BINLOG MONITOR" if flavor == "mariadb" else "REPLICATION CLIENT"
    return PreflightError(
        f"the user {account} may not read the binary log status ({err})",
        f"GRANT {monitor}, REPLICATION SLAVE ON *.* TO {_quote_account(account)};",
    )


def binlog_end(conn: Any, flavor: Flavor | None = None) -> BinlogPosition:
    """The current end of the binary log, with the GTID position at that point when there is one."""
    flavor = flavor or detect_flavor(conn)
    if flavor == "mysql":
        row = _status_row(conn, flavor)
        gtid = row.get("executed_gtid_set")  # same snapshot as the file/offset
        if gtid is None:
            gtid = _rows(conn, "SELECT @@GLOBAL.gtid_executed")[0][0]
        return BinlogPosition(_text(row["file"]), int(row["position"]), _normalise_gtid(gtid))
    # MariaDB: status and gtid_binlog_pos are two reads; a commit in between would pair a GTID with
    # the wrong offset. Retry until the GTID is unchanged around the status read.
    for _ in range(20):
        before = _rows(conn, "SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
        row = _status_row(conn, flavor)
        after = _rows(conn, "SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
        if before == after:
            return BinlogPosition(_text(row["file"]), int(row["position"]), _normalise_gtid(after))
    # Very busy server: ask for the GTID position exactly at that offset (scans the file).
    gtid = _rows(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (row["file"], int(row["position"])))[0][0]
    return BinlogPosition(_text(row["file"]), int(row["position"]), _normalise_gtid(gtid))


def _normalise_gtid(value: Any) -> str | None:
    # MySQL wraps long GTID sets with ",\n"; drop whitespace and empty items.
    text = "".join(_text(value).split()) if value is not None else ""
    return ",".join(item for item in text.split(",") if item) or None


# ---- stored position still available? ---------------------------------------------------------------


def _binary_logs(conn: Any, flavor: Flavor) -> list[tuple[str, int]]:
    try:
        rows = _rows(conn, "SHOW BINARY LOGS")
    except Exception as err:
        if _errno(err) == _ER_NO_BINARY_LOGGING:
            raise PreflightError(
                "the binary log is off on the source server",
                "add log_bin=mysql-bin and server_id=<unique number> to my.cnf and restart the server",
            ) from err
        if _errno(err) in _ER_ACCESS_DENIED:
            raise _privilege_error(conn, flavor, err) from err
        raise
    return [(_text(r[0]), int(r[1])) for r in rows]


def _base(name: str) -> str:
    return name.rsplit(".", 1)[0]


def _file_name(like: str, seq: int) -> str:
    digits = len(like.rsplit(".", 1)[1])
    return f"{_base(like)}.{seq:0{digits}d}"


def _check_file_position(position: BinlogPosition, logs: list[tuple[str, int]]) -> None:
    where = f"binlog {position.file}:{position.pos}"
    if not logs:
        raise PositionLostError(f"{where} is not on the server: it has no binlog files", RESNAPSHOT_FIX)
    oldest, newest = logs[0][0], logs[-1][0]
    sizes = dict(logs)
    if _base(position.file) != _base(oldest):
        raise PositionLostError(
            f"{where} is not on the server: its binlogs are named {_base(oldest)}.* "
            f"({oldest}..{newest}); log_bin changed or this is a different server",
            RESNAPSHOT_FIX,
        )
    wanted = file_sequence(position.file)
    if position.file not in sizes:
        if wanted < file_sequence(oldest):
            last_purged = _file_name(oldest, file_sequence(oldest) - 1)
            gone = position.file if last_purged == position.file else f"{position.file}..{last_purged}"
            raise PositionLostError(
                f"{where} is no longer on the server: the oldest binlog is {oldest} "
                f"(files {gone} were purged)",
                RESNAPSHOT_FIX,
            )
        if wanted > file_sequence(newest):
            raise PositionLostError(
                f"{where} is ahead of the server, whose newest binlog is {newest}: the binlog was reset "
                "(RESET MASTER) or this is a different server",
                RESNAPSHOT_FIX,
            )
        raise PositionLostError(
            f"{where} is missing from the server's binlog list ({oldest}..{newest} has a gap)", RESNAPSHOT_FIX
        )
    if position.pos < 4 or position.pos > sizes[position.file]:
        raise PositionLostError(
            f"{where} is outside that file ({sizes[position.file]} bytes): the binlog was reset or "
            "replaced, or this is a different server",
            RESNAPSHOT_FIX,
        )


def parse_mariadb_gtid(text: str | None) -> dict[int, tuple[int, int]]:
    """``'0-1-100,1-2-57'`` -> ``{domain: (server_id, seq_no)}`` (the highest seq_no per domain)."""
    out: dict[int, tuple[int, int]] = {}
    for item in (text or "").replace(" ", "").split(","):
        if not item:
            continue
        domain, server, seq = (int(x) for x in item.split("-"))
        if domain not in out or seq > out[domain][1]:
            out[domain] = (server, seq)
    return out


def _check_mariadb_gtid(conn: Any, position: BinlogPosition, logs: list[tuple[str, int]]) -> None:
    wanted = parse_mariadb_gtid(position.gtid)
    current = parse_mariadb_gtid(_text(_rows(conn, "SELECT @@GLOBAL.gtid_binlog_state")[0][0]))
    # Wrong server / reset binlog first: that explains everything else.
    for domain, (_, seq) in sorted(wanted.items()):
        if domain not in current:
            raise PositionLostError(
                f"GTID position {position.gtid} is not on the server: it has no transactions of domain "
                f"{domain} (gtid_binlog_state {_gtid_text(current)}); the binlog was reset or this is a "
                "different server",
                RESNAPSHOT_FIX,
            )
        if seq > current[domain][1]:
            raise PositionLostError(
                f"GTID position {position.gtid} is ahead of the server (gtid_binlog_state "
                f"{_gtid_text(current)}): the binlog was reset or this server lacks transactions",
                RESNAPSHOT_FIX,
            )
    # The GTID list at the start of the oldest binlog: everything up to it was purged. (In MariaDB
    # a position holds one GTID per domain; "already read" compares seq_no within the domain.)
    oldest = logs[0][0] if logs else None
    start_text = _rows(conn, "SELECT BINLOG_GTID_POS(%s, 4)", (oldest,))[0][0] if oldest else None
    start = parse_mariadb_gtid(_text(start_text) if start_text is not None else "")
    for domain, (s_server, s_seq) in sorted(start.items()):
        seq = wanted[domain][1] if domain in wanted else 0
        if s_seq <= seq:
            continue
        unread = "" if domain in wanted else ", which the position has never seen,"
        raise PositionLostError(
            f"GTID position {position.gtid} is no longer on the server: the oldest binlog {oldest} "
            f"starts after {domain}-{s_server}-{s_seq}, so transactions {domain}-*-{seq + 1}.."
            f"{domain}-{s_server}-{s_seq} of domain {domain}{unread} were purged",
            RESNAPSHOT_FIX,
        )


def _gtid_text(state: Mapping[int, tuple[int, int]]) -> str:
    return ",".join(f"{d}-{s}-{q}" for d, (s, q) in sorted(state.items())) or "empty"


# MySQL GTID sets: "uuid:1-5:7,uuid2:tag:1-3" (tags from 8.4). Key = (uuid, tag).
GtidSet = dict[tuple[str, str], list[tuple[int, int]]]


def parse_mysql_gtid_set(text: str | None) -> GtidSet:
    out: GtidSet = {}
    for item in "".join((text or "").split()).split(","):
        if not item:
            continue
        parts = item.split(":")
        uuid, tag = parts[0].lower(), ""
        for part in parts[1:]:
            if not re.fullmatch(r"\d+(-\d+)?", part):
                tag = part.lower()
                continue
            low, _, high = part.partition("-")
            out.setdefault((uuid, tag), []).append((int(low), int(high or low)))
    return {key: _merge(ranges) for key, ranges in out.items()}


def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def mysql_gtid_subtract(a: GtidSet, b: GtidSet) -> GtidSet:
    """GTIDs in ``a`` that are not in ``b``."""
    out: GtidSet = {}
    for key, ranges in a.items():
        remaining = list(ranges)
        for b_low, b_high in b.get(key, []):
            nxt: list[tuple[int, int]] = []
            for low, high in remaining:
                if b_high < low or b_low > high:
                    nxt.append((low, high))
                    continue
                if low < b_low:
                    nxt.append((low, b_low - 1))
                if high > b_high:
                    nxt.append((b_high + 1, high))
            remaining = nxt
        if remaining:
            out[key] = remaining
    return out


def format_mysql_gtid_set(gtids: GtidSet) -> str:
    items = []
    for (uuid, tag), ranges in sorted(gtids.items()):
        spans = ":".join(f"{lo}-{hi}" if hi != lo else str(lo) for lo, hi in ranges)
        items.append(f"{uuid}:{tag}:{spans}" if tag else f"{uuid}:{spans}")
    return ",".join(items)


def _check_mysql_gtid(conn: Any, position: BinlogPosition) -> None:
    ours = parse_mysql_gtid_set(position.gtid)
    purged = parse_mysql_gtid_set(_text(_rows(conn, "SELECT @@GLOBAL.gtid_purged")[0][0]))
    executed = parse_mysql_gtid_set(_text(_rows(conn, "SELECT @@GLOBAL.gtid_executed")[0][0]))
    lost = mysql_gtid_subtract(purged, ours)
    if lost:
        raise PositionLostError(
            f"GTID set {position.gtid} is no longer on the server: transactions "
            f"{format_mysql_gtid_set(lost)} that it has not read were purged (gtid_purged "
            f"{format_mysql_gtid_set(purged)})",
            RESNAPSHOT_FIX,
        )
    ahead = mysql_gtid_subtract(ours, executed)
    if ahead:
        raise PositionLostError(
            f"GTID set {position.gtid} is ahead of the server: it never executed "
            f"{format_mysql_gtid_set(ahead)}; the binlog was reset or this is a different server",
            RESNAPSHOT_FIX,
        )


def check_binlog_available(
    conn: Any, position: BinlogPosition, flavor: str, *, resume_by: Literal["file", "gtid"] = "file"
) -> None:
    """Raise PositionLostError unless reading can resume at ``position`` without a gap.

    ``resume_by='file'`` (default) checks the file and offset, and the GTID position too when the
    position has one; ``'gtid'`` (resuming on another server after failover) checks only the GTIDs.
    """
    if flavor not in ("mariadb", "mysql"):
        raise ValueError(f"flavor must be 'mariadb' or 'mysql', not {flavor!r}")
    logs = _binary_logs(conn, flavor)  # type: ignore[arg-type]
    if resume_by == "file":
        _check_file_position(position, logs)
    elif not position.gtid:
        raise PositionLostError(
            f"binlog position {position.describe()} has no GTID, so it cannot be resumed by GTID",
            "resume by file/offset on the original server, or " + RESNAPSHOT_FIX,
        )
    if position.gtid:
        if flavor == "mariadb":
            _check_mariadb_gtid(conn, position, logs)
        else:
            _check_mysql_gtid(conn, position)
