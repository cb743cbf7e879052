"""A throwaway MariaDB server for tests, the demo and benchmarks.

Every :class:`MariaDBServer` gets its own temporary datadir (``mariadb-install-db``), a free TCP port
on 127.0.0.1, and its own socket, pid and log files, and runs ``mariadbd --no-defaults`` so no
system ``my.cnf`` and no system-wide instance is ever touched. The binary log is configured the way
cdclake needs a source: ROW format, FULL row images, GTIDs (always on in MariaDB).

>>> with MariaDBServer(max_binlog_size=8192) as db:
...     _ = db.execute("CREATE DATABASE shop")
...     conn = db.connect(user=db.cdc_user, database="shop")
...     with conn.cursor() as cur:
...         _ = cur.execute("SELECT @@binlog_format")
...         print(cur.fetchone()[0])
...     conn.close()
ROW

Start-up (install + boot + users) takes about a second. The server is not hardened: root and the
``cdc`` user get random passwords, it listens on 127.0.0.1 only, and durability settings are relaxed
(``sync_binlog=0``, ``innodb_flush_log_at_trx_commit=2``) because the data is thrown away.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymysql

from cdclake.errors import CdcError

# Privileges of the capture user: what docs/reference J.60 lists plus MariaDB >= 10.5's split names
# (REPLICATION CLIENT became an alias of BINLOG MONITOR; SHOW VIEW for snapshotting views' DDL).
CDC_GRANTS: tuple[str, ...] = (
    "SELECT",
    "RELOAD",
    "SHOW DATABASES",
    "REPLICATION SLAVE",
    "REPLICATION CLIENT",
    "BINLOG MONITOR",
    "LOCK TABLES",
    "SHOW VIEW",
)

_SEARCH_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin")
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; keep a margin


class MariaDBNotInstalledError(CdcError):
    """The MariaDB server binaries are not on this machine."""


class MariaDBStartError(RuntimeError):
    """The throwaway server did not come up; the message carries the error log tail."""


def _find(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for directory in _SEARCH_DIRS:
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def ensure_installed() -> tuple[str, str]:
    """Paths of ``mariadbd`` and ``mariadb-install-db``; a clear error naming ``make setup`` if missing."""
    server, install_db = _find("mariadbd"), _find("mariadb-install-db")
    missing = [name for name, path in (("mariadbd", server), ("mariadb-install-db", install_db)) if not path]
    if missing:
        raise MariaDBNotInstalledError(
            f"MariaDB server binaries not found: {', '.join(missing)} (looked on PATH and in "
            f"{', '.join(_SEARCH_DIRS)})",
            "run `make setup` (installs the Debian packages mariadb-server and mariadb-client), "
            "or `apt-get install mariadb-server mariadb-client`",
            permanent=True,
        )
    assert server and install_db
    return server, install_db


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to port 0 and release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask Linux to SIGTERM the server when the process that
    # started it dies, so a killed test run does not leave servers behind.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


_LIVE: weakref.WeakSet[MariaDBServer] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        server.stop()


class MariaDBServer:
    """A private ``mariadbd`` with binlog on, in a temp dir; a context manager (also ``start``/``stop``).

    ``max_binlog_size`` (bytes, MariaDB minimum 4096) lets tests rotate binlog files quickly;
    ``extra_args`` are appended to the ``mariadbd`` command line and win over the defaults.
    ``die_with_parent`` ties the server's life to the *thread* that started it (Linux
    ``PR_SET_PDEATHSIG``): turn it off when starting it from a short-lived thread.
    """

    host = "127.0.0.1"
    cdc_user = "cdc"

    def __init__(
        self,
        *,
        max_binlog_size: int | None = None,
        binlog_row_metadata: str | None = "FULL",
        extra_args: Sequence[str] = (),
        startup_timeout: float = 60.0,
        base_dir: str | os.PathLike[str] | None = None,
        keep_dir: bool = False,
        die_with_parent: bool = True,
    ) -> None:
        if max_binlog_size is not None and max_binlog_size < 4096:
            raise ValueError("max_binlog_size must be at least 4096 bytes (MariaDB's minimum)")
        self.max_binlog_size = max_binlog_size
        self.binlog_row_metadata = binlog_row_metadata
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self._base_dir = os.fspath(base_dir) if base_dir is not None else None
        self.keep_dir = keep_dir
        self.die_with_parent = die_with_parent

        self.root_password = secrets.token_urlsafe(16)
        self.cdc_password = secrets.token_urlsafe(16)
        self.port = 0
        self.dir: Path | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._passwords: dict[str, str] = {"root": self.root_password, self.cdc_user: self.cdc_password}
        self._admin: pymysql.connections.Connection[Any] | None = None
        self._lock = threading.RLock()

    # ---- paths ----------------------------------------------------------------------------------

    def _path(self, name: str) -> Path:
        if self.dir is None:
            raise RuntimeError("the MariaDB server has not been started")
        return self.dir / name

    @property
    def datadir(self) -> Path:
        """Where the tables and the binlog files (``mysql-bin.NNNNNN``) live."""
        return self._path("data")

    @property
    def tmpdir(self) -> Path:
        """The server's own temporary files (not the shared /tmp: two servers bootstrapping at once there
        have failed on each other's temporary tables)."""
        return self._path("tmp")

    @property
    def socket(self) -> Path:
        return self._path("mysqld.sock")

    @property
    def error_log(self) -> Path:
        return self._path("mysqld.err")

    @property
    def pid_file(self) -> Path:
        return self._path("mysqld.pid")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ---- life cycle -----------------------------------------------------------------------------

    def __enter__(self) -> MariaDBServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> MariaDBServer:
        """Initialise the datadir, boot the server, wait until it answers, create the users."""
        if self._proc is not None:
            raise RuntimeError("the MariaDB server is already started")
        server_bin, install_db = ensure_installed()
        started = time.monotonic()
        self.dir = Path(tempfile.mkdtemp(prefix="cdclake-mariadb-", dir=self._base_dir))
        if len(str(self.socket)) > _SOCKET_PATH_MAX:  # a long TMPDIR would break the unix socket
            shutil.rmtree(self.dir)
            self.dir = Path(tempfile.mkdtemp(prefix="cdclake-mariadb-", dir="/tmp"))
        _LIVE.add(self)
        try:
            self._install(install_db)
            for attempt in range(3):  # the free port can be taken between probe and bind: retry
                self.port = free_port(self.host)
                self._boot(server_bin)
                try:
                    self._wait_ready()
                    break
                except MariaDBStartError:
                    if attempt < 2 and self._port_clash():
                        self._reap()
                        continue
                    raise
            self._bootstrap_users()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _install(self, install_db: str) -> None:
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        cmd = [
            install_db,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            # Keep the datadir small and the bootstrap fast; must match the server's settings.
            "--innodb-log-file-size=8M",
            "--innodb-buffer-pool-size=64M",
        ]
        if os.geteuid() == 0:
            cmd.append("--user=root")
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        if result.returncode != 0:
            tail = result.stdout.decode(errors="replace")[-3000:]
            raise MariaDBStartError(f"mariadb-install-db failed (exit {result.returncode}):\n{tail}")

    def server_args(self) -> list[str]:
        """The ``mariadbd`` options (without the binary); ``extra_args`` come last so they win."""
        args = [
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            f"--socket={self.socket}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            "--skip-name-resolve",
            "--log-bin=mysql-bin",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--server-id=1",
            "--log-slave-updates",
            "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=8M",
            "--character-set-server=utf8mb4",
            "--default-time-zone=+00:00",
            # Throwaway data: trade durability for speed (benchmarks measure cdclake, not fsync).
            "--sync-binlog=0",
            "--innodb-flush-log-at-trx-commit=2",
            "--innodb-doublewrite=0",
            "--max-connections=500",
        ]
        if os.geteuid() == 0:
            args.append("--user=root")  # mariadbd refuses to run as root without it
        if self.max_binlog_size is not None:
            args.append(f"--max-binlog-size={self.max_binlog_size}")
        if self.binlog_row_metadata:
            args.append(f"--binlog-row-metadata={self.binlog_row_metadata}")
        return args + self.extra_args

    def _boot(self, server_bin: str) -> None:
        self.error_log.unlink(missing_ok=True)
        with open(self._path("mysqld.out"), "ab") as out:
            self._proc = subprocess.Popen(
                [server_bin, *self.server_args()],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if (self.die_with_parent and sys.platform == "linux") else None,
            )

    def _log_tail(self, lines: int = 30) -> str:
        chunks = []
        for name in ("mysqld.err", "mysqld.out"):
            try:
                text = self._path(name).read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                chunks.append(f"--- {name} ---\n" + "\n".join(text.splitlines()[-lines:]))
        return "\n".join(chunks) or "(no log output)"

    def _port_clash(self) -> bool:
        log = self._log_tail(200)
        return "Bind on TCP/IP port" in log or "Address already in use" in log

    def _wait_ready(self) -> None:
        # Poll a real connection (bounded) rather than sleeping: boot time varies a lot across machines.
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise MariaDBStartError(
                    f"mariadbd exited with code {code} during start-up "
                    f"(datadir {self.datadir}):\n{self._log_tail()}"
                )
            if self.socket.exists():
                try:
                    # Root has no password yet (install-db 'normal' auth) and only localhost accounts:
                    # use the socket.
                    pymysql.connect(unix_socket=str(self.socket), user="root", connect_timeout=2).close()
                    return
                except pymysql.err.OperationalError as err:
                    last_error = err
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        raise MariaDBStartError(
            f"mariadbd did not accept connections within {self.startup_timeout:.0f}s "
            f"(last error: {last_error}):\n{self._log_tail()}"
        )

    def _bootstrap_users(self) -> None:
        conn = pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                # install-db also creates root@<hostname>, which --skip-name-resolve ignores (and
                # ALTER USER then fails on): drop it, keep the loopback accounts.
                loopback = ("localhost", "127.0.0.1", "::1")
                cur.execute(
                    "DELETE FROM mysql.global_priv WHERE user = 'root' AND host NOT IN %s", (loopback,)
                )
                cur.execute(
                    "DELETE FROM mysql.proxies_priv WHERE user = 'root' AND host NOT IN %s", (loopback,)
                )
                cur.execute("FLUSH PRIVILEGES")
                cur.execute("SELECT user, host FROM mysql.user WHERE user = 'root'")
                hosts = [host for _, host in cur.fetchall()]
                for host in hosts:
                    cur.execute("ALTER USER 'root'@%s IDENTIFIED BY %s", (host, self.root_password))
                if "127.0.0.1" not in hosts:
                    cur.execute("CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY %s", (self.root_password,))
                    cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
        finally:
            conn.close()
        self.create_user(self.cdc_user, self.cdc_password, list(CDC_GRANTS))

    def stop(self, timeout: float = 30.0) -> None:
        """Shut down cleanly (SHUTDOWN, then SIGTERM, then SIGKILL) and remove the temp dir."""
        with self._lock:
            if self._admin is not None:
                try:
                    self._admin.close()
                except Exception:
                    pass
                self._admin = None
        if self._proc is not None and self._proc.poll() is None:
            try:
                conn = pymysql.connect(
                    unix_socket=str(self.socket), user="root", password=self.root_password, connect_timeout=2
                )
                try:
                    with conn.cursor() as cur:
                        cur.execute("SHUTDOWN")
                finally:
                    try:
                        conn.close()
                    except Exception:
                        pass
            except Exception:
                pass
            self._reap(timeout)
        self._proc = None
        _LIVE.discard(self)
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _reap(self, timeout: float = 30.0) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._proc = None

    # ---- connections and helpers ----------------------------------------------------------------

    def connection_settings(self, user: str | None = None, password: str | None = None) -> dict[str, Any]:
        """``host/port/user/password`` for pymysqlreplication's ``BinLogStreamReader``."""
        user = user or "root"
        return {
            "host": self.host,
            "port": self.port,
            "user": user,
            "password": self._password(user, password),
        }

    def _password(self, user: str, password: str | None) -> str:
        if password is not None:
            return password
        try:
            return self._passwords[user]
        except KeyError:
            raise ValueError(f"no password known for user {user!r}: pass password=...") from None

    def connect(
        self,
        user: str | None = None,
        database: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> pymysql.connections.Connection[Any]:
        """A new autocommit pymysql connection over TCP (root unless ``user`` is given)."""
        user = user or "root"
        if not self.running:
            raise RuntimeError("the MariaDB server is not running")
        options: dict[str, Any] = {"autocommit": True, "charset": "utf8mb4", "connect_timeout": 10}
        options.update(kwargs)
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=user,
            password=self._password(user, password),
            database=database,
            **options,
        )

    def _admin_cursor_run(self, sql: str, params: Any, fetch: bool) -> Any:
        with self._lock:
            if self._admin is not None:
                try:
                    self._admin.ping(False)
                except pymysql.err.Error:  # dropped (server restart, wait_timeout): open a new one
                    self._admin = None
            if self._admin is None:
                self._admin = self.connect()
            with self._admin.cursor() as cur:
                count = cur.execute(sql, params)
                return [tuple(row) for row in cur.fetchall()] if fetch else count

    def execute(self, sql: str, params: Any = None) -> int:
        """Run one statement as root (autocommit); returns the affected row count."""
        return int(self._admin_cursor_run(sql, params, fetch=False))

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement as root and return all rows."""
        return list(self._admin_cursor_run(sql, params, fetch=True))

    def create_user(self, name: str, password: str, grants: Sequence[str]) -> None:
        """``CREATE USER name@'%'`` with ``grants``: privilege names (on ``*.*``) or ``'PRIV ON db.*'``."""
        self.execute(f"DROP USER IF EXISTS {_ident(name)}@'%'")
        self.execute(f"CREATE USER {_ident(name)}@%s IDENTIFIED BY %s", ("%", password))
        for grant in grants:
            target = grant if " ON " in grant.upper() else f"{grant} ON *.*"
            self.execute(f"GRANT {target} TO {_ident(name)}@'%'")
        self._passwords[name] = password

    def current_binlog(self) -> tuple[str, int]:
        """``(file, position)`` of the end of the binary log."""
        rows = self.query("SHOW MASTER STATUS")
        if not rows:
            raise RuntimeError("binary logging is off on this server")
        return str(rows[0][0]), int(rows[0][1])

    def binlog_files(self) -> list[tuple[str, int]]:
        """``SHOW BINARY LOGS`` as ``(file, size)`` pairs, oldest first."""
        return [(str(row[0]), int(row[1])) for row in self.query("SHOW BINARY LOGS")]

    def flush_logs(self) -> str:
        """Rotate to a new binlog file; returns its name."""
        self.execute("FLUSH BINARY LOGS")
        return self.current_binlog()[0]

    def purge_logs_to(self, file: str, timeout: float = 30.0) -> None:
        """Delete every binlog file before ``file`` (like an expiring retention would), and wait for it.

        MariaDB silently keeps files whose transactions InnoDB has not checkpointed yet (with
        ``innodb_flush_log_at_trx_commit=2`` that takes up to about a second), so retry until done.
        """
        deadline = time.monotonic() + timeout
        while True:
            self.execute("PURGE BINARY LOGS TO %s", (file,))
            oldest = self.binlog_files()[0][0]
            if oldest == file:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"PURGE BINARY LOGS TO {file!r} left {oldest} on the server")
            time.sleep(0.05)

    def gtid_binlog_pos(self) -> str:
        return str(self.query("SELECT @@GLOBAL.gtid_binlog_pos")[0][0])

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MariaDBServer({self.host}:{self.port}, {state}, dir={self.dir})"


def _ident(name: str) -> str:
    """Quote an identifier/account name for MariaDB."""
    return "`" + name.replace("`", "``") + "`"
