"""A throwaway PostgreSQL cluster for tests and benchmarks: logical decoding on, never a system instance.

Every :class:`PostgresServer` gets its own temporary data directory (``initdb``), a free TCP port on
127.0.0.1 and its own socket directory, and runs ``postgres`` with the settings a logical-decoding source
needs (``wal_level=logical``, replication slots and WAL senders) and durability relaxed (the data is thrown
away). As root, the cluster runs as the ``postgres`` user that Debian's packages create (``initdb`` refuses
root).

>>> with PostgresServer() as pg:
...     with pg.connect(user=pg.cdc_user) as conn:
...         print(conn.execute("SHOW wal_level").fetchone()[0])
logical

Start-up (``initdb`` + boot + users) takes about two seconds.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cdclake.errors import CdcError
from cdclake.testing.mariadb import _die_with_parent, free_port


class PostgresNotInstalledError(CdcError):
    """The PostgreSQL server binaries are not on this machine."""


class PostgresStartError(RuntimeError):
    """The throwaway cluster did not come up; the message carries the log's tail."""


def find_bindir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``postgres`` and ``initdb`` (Debian's layout)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    for path in reversed(candidates):
        bindir = Path(path).parent
        if os.access(bindir / "initdb", os.X_OK):
            return bindir
    on_path = shutil.which("postgres")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    raise PostgresNotInstalledError(
        "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and on PATH)",
        "run `make setup` (installs Debian's postgresql package), or `apt-get install postgresql`", permanent=True)


_LIVE: weakref.WeakSet[PostgresServer] = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_LIVE):
        server.stop()


class PostgresServer:
    """A private PostgreSQL cluster in a temp dir; a context manager (also ``start``/``stop``).

    ``settings`` are extra ``-c name=value`` server settings and win over the defaults (e.g.
    ``{"max_slot_wal_keep_size": "64MB"}``). The ``cdc`` user has ``LOGIN REPLICATION`` and owns the
    ``cdclake`` database; the ``postgres`` superuser has a random password too.
    """

    host = "127.0.0.1"
    cdc_user = "cdc"
    database = "cdclake"

    def __init__(self, *, settings: dict[str, str] | None = None, startup_timeout: float = 60.0) -> None:
        self.bindir = find_bindir()
        self.settings = dict(settings or {})
        self.startup_timeout = startup_timeout
        self.port = 0
        self.root: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.passwords = {"postgres": secrets.token_hex(12), self.cdc_user: secrets.token_hex(12)}
        # initdb and postgres refuse to run as root: as root, the cluster belongs to the postgres user
        self._run_as = "postgres" if os.geteuid() == 0 else None

    # -- paths ----------------------------------------------------------------------------------------

    @property
    def datadir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None
        return self.root / "sock"

    @property
    def log_file(self) -> Path:
        assert self.root is not None
        return self.root / "server.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- life cycle -------------------------------------------------------------------------------------

    def start(self) -> PostgresServer:
        self.root = Path(tempfile.mkdtemp(prefix="cdclake-pg-"))
        self.socket_dir.mkdir()
        if self._run_as:
            entry = pwd.getpwnam(self._run_as)
            for path in (self.root, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(self.passwords["postgres"] + "\n")
        if self._run_as:
            os.chown(pwfile, pwd.getpwnam(self._run_as).pw_uid, -1)
        self._run([str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", "postgres", "--pwfile", str(pwfile),
                   "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"])
        pwfile.unlink()
        _LIVE.add(self)
        for _ in range(5):  # a port taken between free_port() and the bind: try another
            self.port = free_port(self.host)
            self._boot()
            try:
                self._wait_ready()
                break
            except PostgresStartError:
                if "could not bind" not in self._log_tail() or self.running:
                    raise
        self._bootstrap()
        return self

    def _run(self, cmd: Sequence[str]) -> None:
        done = subprocess.run(cmd, capture_output=True, text=True, user=self._run_as, check=False)
        if done.returncode != 0:
            raise PostgresStartError(f"{Path(cmd[0]).name} failed ({done.returncode}): {done.stderr.strip()}")

    def server_args(self) -> list[str]:
        settings = {
            "listen_addresses": self.host, "port": str(self.port), "unix_socket_directories": str(self.socket_dir),
            "wal_level": "logical", "max_replication_slots": "16", "max_wal_senders": "16",
            "fsync": "off", "full_page_writes": "off", "max_connections": "60",
            "shared_buffers": "64MB", "logging_collector": "off", **self.settings,
        }
        # synchronous_commit stays on: logical decoding reads only flushed WAL, so a commit the test made
        # must be flushed before a window can see it (fsync=off keeps the flush cheap)
        out = [str(self.bindir / "postgres"), "-D", str(self.datadir)]
        for name, value in settings.items():
            out += ["-c", f"{name}={value}"]
        return out

    def _boot(self) -> None:
        log = open(self.log_file, "ab")  # noqa: SIM115 - the server writes it while it runs
        try:
            self.process = subprocess.Popen(self.server_args(), stdout=log, stderr=subprocess.STDOUT,
                                            user=self._run_as, preexec_fn=_die_with_parent)
        finally:
            log.close()

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + self.startup_timeout
        while True:
            if not self.running:
                raise PostgresStartError(f"postgres exited at start-up:\n{self._log_tail()}")
            try:
                psycopg.connect(host=str(self.socket_dir), port=self.port, user="postgres", dbname="postgres",
                                connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise PostgresStartError(f"postgres not ready after {self.startup_timeout} s:\n"
                                             f"{self._log_tail()}") from None
                time.sleep(0.05)  # start-up poll, not a test's timing

    def _bootstrap(self) -> None:
        with self._admin("postgres") as conn:
            conn.execute(f"CREATE ROLE {self.cdc_user} LOGIN REPLICATION PASSWORD "
                         f"'{self.passwords[self.cdc_user]}'")
            conn.execute(f"CREATE DATABASE {self.database} OWNER {self.cdc_user}")

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT), then SIGKILL if it does not end; the directory goes."""
        _LIVE.discard(self)
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    # -- connections ------------------------------------------------------------------------------------

    def _admin(self, dbname: str | None = None) -> Any:
        """A superuser connection over the socket (trust), autocommit."""
        import psycopg

        return psycopg.connect(host=str(self.socket_dir), port=self.port, user="postgres",
                               dbname=dbname or self.database, autocommit=True)

    def connection_settings(self, user: str | None = None, dbname: str | None = None) -> dict[str, Any]:
        """Keyword arguments of ``psycopg.connect`` over TCP with a password (as a source connects)."""
        name = user or self.cdc_user
        return {"host": self.host, "port": self.port, "user": name, "password": self.passwords[name],
                "dbname": dbname or self.database}

    def connect(self, user: str | None = None, dbname: str | None = None, autocommit: bool = True,
                **kwargs: Any) -> Any:
        import psycopg

        return psycopg.connect(**self.connection_settings(user, dbname), autocommit=autocommit, **kwargs)

    def execute(self, sql: str, params: Any = None, dbname: str | None = None) -> None:
        """A statement as the superuser (autocommit)."""
        with self._admin(dbname) as conn:
            conn.execute(sql, params)

    def query(self, sql: str, params: Any = None, dbname: str | None = None) -> list[tuple[Any, ...]]:
        with self._admin(dbname) as conn:
            return conn.execute(sql, params).fetchall()

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"
