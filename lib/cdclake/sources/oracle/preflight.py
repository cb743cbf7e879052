"""Is the database set up for LogMiner CDC? Each problem comes with the SQL that fixes it."""

from __future__ import annotations

import logging
import re
from typing import Any

from cdclake.errors import PreflightError
from cdclake.sources.oracle import queries as Q

# Privileges the LogMiner user needs (Debezium's list); roles give the catalog views.
REQUIRED_PRIVILEGES = ("CREATE SESSION", "SELECT ANY TRANSACTION", "FLASHBACK ANY TABLE", "SELECT ANY TABLE")
REQUIRED_ROLES = ("SELECT_CATALOG_ROLE", "EXECUTE_CATALOG_ROLE")
log = logging.getLogger(__name__)


def check(client: Any, pdb: str | None, captured: list[str], user: str, *,
          archive_log_only: bool = False, lob: bool = True) -> dict[str, Any]:
    """Raise :class:`PreflightError` for the first problem; return the facts checked. Warns when
    values would be left unavailable (extended strings without LOB capture)."""
    name, log_mode, supp_min, supp_all, cdb = client.query(Q.DATABASE_INFO)[0]
    dbid, role, open_mode, resetlogs = check_role(client, str(name), archive_log_only)
    if str(log_mode).upper() != "ARCHIVELOG":
        raise PreflightError(
            f"database {name} is in {log_mode} mode: redo is not archived, so LogMiner cannot mine past a log "
            "switch",
            "as SYSDBA: SHUTDOWN IMMEDIATE; STARTUP MOUNT; ALTER DATABASE ARCHIVELOG; ALTER DATABASE OPEN; "
            "(and size db_recovery_file_dest_size for the archive volume)",
        )
    if str(supp_min).upper() not in ("YES", "IMPLICIT"):
        raise PreflightError(
            f"database {name} has no minimal supplemental logging: updates lack the data LogMiner needs",
            "ALTER DATABASE ADD SUPPLEMENTAL LOG DATA;",
        )
    is_cdb = str(cdb).upper() == "YES"
    if is_cdb and not pdb:
        raise PreflightError(f"database {name} is a CDB but source.pdb is not set",
                             "set source.pdb to the PDB that holds the captured tables (e.g. ORCLPDB1)")
    if not is_cdb and pdb:
        raise PreflightError(f"database {name} is not a CDB but source.pdb is set to {pdb}",
                             "remove source.pdb (it is only for multitenant databases)")
    version = str(client.query(Q.VERSION)[0][0])
    major = int(re.match(r"\d+", version).group(0)) if re.match(r"\d+", version) else 0
    if major < 12:
        raise PreflightError(f"Oracle {version} is not supported (LogMiner CDC needs 12c or later)",
                             "upgrade the database, or capture from a 12c+ standby that was promoted")
    privileges = {str(r[0]).upper() for r in client.query(Q.SESSION_PRIVILEGES)}
    roles = {str(r[0]).upper() for r in client.query(Q.SESSION_ROLES)}
    needed = list(REQUIRED_PRIVILEGES) + (["LOGMINING"] if major >= 12 else [])
    if is_cdb:
        needed.append("SET CONTAINER")
    missing = [p for p in needed if p not in privileges]
    missing_roles = [r for r in REQUIRED_ROLES if r not in roles]
    if missing or missing_roles:
        scope = " CONTAINER=ALL" if is_cdb else ""
        grants = "; ".join(f"GRANT {p} TO {user}{scope}" for p in missing + missing_roles)
        raise PreflightError(f"user {user} lacks {', '.join(missing + missing_roles)}", grants + ";")
    if str(supp_all).upper() != "YES" and captured:
        logged = {f"{o}.{t}" for o, t in client.query(Q.ALL_COLUMN_LOGGING)}
        lacking = [t for t in captured if t not in logged]
        if lacking:
            sql = "; ".join(f'ALTER TABLE "{t.split(".", 1)[0]}"."{t.split(".", 1)[1]}" ADD SUPPLEMENTAL LOG DATA '
                            "(ALL) COLUMNS" for t in lacking[:10])
            raise PreflightError(
                f"{len(lacking)} captured table(s) lack (ALL) COLUMNS supplemental logging, so updates and deletes "
                f"would come without full before images: {', '.join(lacking[:10])}"
                + (" ..." if len(lacking) > 10 else ""),
                sql + ";" + (" (and the same for the others)" if len(lacking) > 10 else ""),
            )
    string_size = str(client.query(Q.MAX_STRING_SIZE)[0][0]).upper()
    if string_size == "EXTENDED" and not lob:
        log.warning(
            "database %s has MAX_STRING_SIZE=EXTENDED and source.mining.lob is false: VARCHAR2/NVARCHAR2 values "
            "over 4000 bytes and RAW values over 2000 come as 32K_BEGIN/32K_WRITE rows that are only read with "
            "LOB capture, so those columns keep the lake's previous value (listed as unavailable) when such a "
            "value is written; set source.mining.lob: true to capture them", name)
    return {"database": name, "version": version, "cdb": is_cdb, "dbid": dbid, "role": role, "resetlogs": resetlogs,
            "max_string_size": string_size}


def check_role(client: Any, name: str, archive_log_only: bool) -> tuple[int, str, str, int]:
    """Data Guard role: only a primary (or a logical standby, archived logs only) can be mined.
    Returns DBID, role, open mode and the incarnation's RESETLOGS_CHANGE#."""
    dbid, role, open_mode, resetlogs = client.query(Q.DATABASE_ROLE)[0]
    dbid, role, open_mode, resetlogs = int(dbid), str(role).upper(), str(open_mode).upper(), int(resetlogs)
    where = f"database {name} (DBID {dbid}) is a {role} ({open_mode})"
    if role == "PHYSICAL STANDBY":
        raise PreflightError(
            f"{where}: a physical standby cannot be mined (LogMiner with the online catalog needs an open "
            "primary, and its redo is the primary's)",
            "mine the primary: point source.dsn at it; after a failover, promote the standby (ALTER DATABASE "
            "FAILOVER TO ... / ACTIVATE STANDBY DATABASE): as PRIMARY with the same DBID it continues from the "
            "pipeline's checkpoint",
        )
    if role in ("SNAPSHOT STANDBY", "FAR SYNC"):
        why = ("its changes are discarded when it converts back to a physical standby" if role == "SNAPSHOT STANDBY"
               else "a far sync instance has no data files")
        raise PreflightError(f"{where}: it cannot be mined ({why})", "mine the primary: point source.dsn at it")
    if role == "LOGICAL STANDBY" and not archive_log_only:
        raise PreflightError(
            f"{where}: its database guard blocks the flush table the miner commits to (ORA-16224), so online "
            "redo cannot be mined safely",
            "set source.mining.archive_log_only: true to mine a logical standby (archived logs only); note that "
            "its SCNs are its own: a pipeline snapshotted on the primary cannot continue here (re-snapshot)",
        )
    return dbid, role, open_mode, resetlogs
