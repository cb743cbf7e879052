"""Every command line the documentation shows is run by some test, or marked an illustration with a reason.

The documentation is ``README.md`` and ``docs/*.md``. A command line is a line of a ``bash``/``sh`` code
block (continued over ``\\``, comments and ``export`` lines left out: any program) or an inline code span
that starts with a program of ours (``cdclake``, ``spark-submit``, ``make``, Airflow's CLI...). Each is
reduced to its program, its verb (``cdclake backfill``, ``spark-submit jobs/mine.py``, ``airflow dags test``,
``make demo``) and its flags: those outside ``[...]`` are required, each ``[--flag ...]`` is optional.

Tests record the commands they run (:func:`record`; ``CliRunner.invoke`` of cdclake's command line is
recorded by ``tests/conftest.py``) into the folder ``$CDCLAKE_TEST_COMMANDS``. At the end of a whole-suite
run (``make test``) :func:`uncovered` lists each documented command no test ran with the same program,
verb and required flags, or with one of its optional flags, and the session fails naming them.

>>> documented("x.md", "Run `cdclake mine --config f.yaml [--max-events 10]` now.")[0].flags
frozenset({'--config'})
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD_DIR_ENV = "CDCLAKE_TEST_COMMANDS"

# program + verb -> why no test runs it (the program alone: every verb of it)
ILLUSTRATIONS: dict[str, str] = {
    "make demo": "`make setup`, then `cdclake demo`, which tests/integration/test_demo.py runs in the suite's Spark "
                 "session (a JVM of make's own would add ~90 s)",
    "make test": "the suite itself: CI runs it, it cannot run inside itself",
    "make setup": "run by every `make test` (its first step) and by CI on a clean clone",
    "make bench": "benchmarks take 45 min; BENCHMARKS.md records their runs, not the suite",
    "make bench-db2": "a benchmark (BENCHMARKS.md), not a test",
    "make bench-postgres": "a benchmark (BENCHMARKS.md), not a test",
    "make bench-oracle": "a benchmark (BENCHMARKS.md), not a test",
    "make test-oracle-live": "needs a real Oracle database, which cannot run here (docs/oracle.md)",
    "make test-db2-live": "needs a real Db2 with ASN Capture, which cannot run here (docs/db2.md)",
    "docker": "starts an Oracle container: no Docker engine on the test machine",
    "pip": "packaging: `make setup` installs the same extras with `uv pip install -e .[...]`",
    "cdclake binlog": "not a command: the words a binlog split reader's error starts with (docs/operations.md)",
    "airflow dags trigger": "needs a running Airflow scheduler to do anything; `airflow dags test` runs the "
                            "same DAGs in-process",
    "spark-submit jobs/<verb>.py": "the pattern of every job: jobs/mine.py, snapshot.py... are each run",
}


@dataclass(frozen=True)
class Command:
    """One command line: where it is shown (``where``), or run."""

    program: str
    verb: str
    flags: frozenset[str]
    optional: frozenset[str] = frozenset()
    where: str = ""
    text: str = ""

    @property
    def key(self) -> str:
        return f"{self.program} {self.verb}".strip()


def parse(text: str, where: str = "") -> Command | None:
    """The program, verb and flags of a command line (None for an empty one).

    >>> c = parse("spark-submit --master spark://m:7077 jobs/mine.py --config /etc/shop.yaml")
    >>> c.key, sorted(c.flags)
    ('spark-submit jobs/mine.py', ['--config', '--master'])
    >>> c = parse(".venv-airflow/bin/airflow dags list --local")
    >>> c.key, sorted(c.flags)
    ('airflow dags list', ['--local'])
    >>> sorted(parse("cdclake reconcile --config f [--table t]... [--repair]").optional)
    ['--repair', '--table']
    """
    optional = {flag for group in re.findall(r"\[([^\[\]]*)\]", text) for flag in _flags(_words(group))}
    words = _words(re.sub(r"\[[^\[\]]*\]", " ", text).replace("...", " "))
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program.startswith("python"):
        program = "python"
    rest = words[1:]
    if program == "spark-submit":  # the job, as jobs/<verb>.py wherever the checkout is
        verb = next((w for w in rest if w.endswith(".py")), "")
        verb = "jobs/" + verb.rsplit("/", 1)[-1] if "jobs/" in verb else verb
    elif program == "airflow":
        verb = " ".join([w for w in rest if not w.startswith("-")][:2])
    elif program == "python":
        verb = " ".join(rest[:2]) if rest[:1] == ["-m"] else (rest[0] if rest else "")
    else:  # cdclake (after its global --debug), make, spark-class...: the first word that is not a flag
        verb = next((w for w in rest if not w.startswith("-")), "")
    return Command(program, verb, frozenset(_flags(rest)), frozenset(optional), where, " ".join(text.split()))


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote in prose: split on blanks
        return text.split()


def _flags(words: Iterable[str]) -> set[str]:
    return {w.split("=", 1)[0] for w in words if w.startswith("-") and w not in ("-", "--") and not w[1:2].isdigit()}


SHELL_BLOCK = re.compile(r"^```(bash|sh|shell|console)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`((?:\.venv[\w-]*/bin/)?(?:cdclake|spark-submit|make|airflow|pip|python3?) [^`]+)`")


def documented(where: str, text: str) -> list[Command]:
    """The command lines of one Markdown file."""
    out = []
    for block in SHELL_BLOCK.finditer(text):
        line_no = text[:block.start(2)].count("\n") + 1
        for i, line in enumerate(block.group(2).replace("\\\n", " ").splitlines()):
            stripped = line.strip()
            if stripped and not stripped.startswith(("#", "export ")):
                command = parse(stripped, f"{where}:{line_no + i}")
                if command is not None:
                    out.append(command)
    for span in INLINE.finditer(text):
        command = parse(" ".join(span.group(1).split()), f"{where}:{text[:span.start()].count(chr(10)) + 1}")
        if command is not None:
            out.append(command)
    return out


def documentation() -> list[Command]:
    """Every command line of README.md and docs/*.md."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [c for f in files for c in documented(str(f.relative_to(ROOT)), f.read_text())]


def record(argv: Sequence[str]) -> None:
    """Note that a test ran ``argv`` (a program and its arguments), when the suite keeps a record."""
    folder = os.environ.get(RECORD_DIR_ENV)
    if folder:
        with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
            out.write(json.dumps([str(a) for a in argv]) + "\n")


def recorded(folder: str | os.PathLike[str]) -> list[Command]:
    """The commands tests ran, as :func:`record` kept them."""
    out = []
    for path in Path(folder).glob("*.jsonl"):
        for line in path.read_text().splitlines():
            command = parse(shlex.join(json.loads(line)))
            if command is not None:
                out.append(command)
    return out


def illustration(command: Command) -> str | None:
    """Why ``command`` is not run by a test, if it is marked an illustration."""
    return ILLUSTRATIONS.get(command.key) or ILLUSTRATIONS.get(command.program)


def uncovered(shown: Iterable[Command], ran: Iterable[Command]) -> list[str]:
    """Each documented command no test ran (same program and verb, its flags, and each optional flag in
    some run), unless it is an illustration: ``where: text (what is missing)``."""
    runs: dict[str, list[frozenset[str]]] = {}
    for command in ran:
        runs.setdefault(command.key, []).append(command.flags)
    out = []
    for command in shown:
        if illustration(command):
            continue
        # a command shown without its verb (`cdclake --debug ...`) is covered by a run of any verb
        same = runs.get(command.key, []) if command.verb else [f for k, fs in runs.items()
                                                               if k.split(" ")[0] == command.program for f in fs]
        flag_sets = [f for f in same if command.flags <= f]
        if not flag_sets:
            out.append(f"{command.where}: {command.text} (no test runs `{command.key}` with "
                       f"{' '.join(sorted(command.flags)) or 'any flags'})")
            continue
        missing = sorted(o for o in command.optional if not any(o in f for f in flag_sets))
        if missing:
            out.append(f"{command.where}: {command.text} (no test runs it with {', '.join(missing)})")
    return out
