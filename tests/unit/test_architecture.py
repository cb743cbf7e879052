"""The shape the code must keep: sources are plug-ins the engine never names (docs/architecture.md)."""

from __future__ import annotations

import re
from pathlib import Path

from cdclake.spi import plugins

LIB = Path(__file__).resolve().parents[2] / "lib" / "cdclake"
ROOT = LIB.parents[1]


def _source_names() -> set[str]:
    return {name for p in plugins() for name in (p.name, *p.types)}


def test_every_builtin_source_is_registered_with_its_files() -> None:
    builtin = sorted(d.name for d in (LIB / "sources").iterdir() if (d / "plugin.py").exists())
    assert sorted(p.name for p in plugins()) == builtin
    for p in plugins():
        package = LIB / "sources" / p.name
        assert (package / "requirements.txt").is_file(), f"{p.name}: no requirements.txt (its install extra)"
        assert p.docs and (ROOT / p.docs).is_file(), f"{p.name}: docs page {p.docs!r} is missing"
        assert p.types and p.config_model is not None, p.name
        literal = p.config_model.model_fields["type"].annotation
        assert set(getattr(literal, "__args__", ())) == set(p.types), f"{p.name}: config type tags != types"


def test_the_engine_names_no_source() -> None:
    """Not in code, messages or comments: what differs per source belongs to the source plug-in."""
    pattern = re.compile(r"\b(" + "|".join(sorted(_source_names())) + r")\b", re.IGNORECASE)
    found = []
    for path in sorted((LIB / "engine").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if pattern.search(line):
                found.append(f"{path.relative_to(LIB)}:{number}: {line.strip()}")
    assert not found, "source names in the engine (move the detail into the source plug-in):\n" + "\n".join(found)


def _files_every_source_adds() -> list[str]:
    """The paths of the rows of docs/architecture.md's "Writing a source" table marked "every source"."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## Writing a source", 1)[1].split("\n## ", 1)[0]
    paths = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1] == "every source":
            paths += re.findall(r"`([^`]+)`", cells[0])
    return paths


def test_the_architecture_doc_lists_the_files_every_source_has() -> None:
    paths = _files_every_source_adds()
    assert {"lib/cdclake/sources/db9/plugin.py", "lib/cdclake/sources/db9/snapshot.py", "conf/example-db9.yaml",
            "tests/conformance/db9.py", "docs/db9.md"} <= set(paths), paths
    missing = []
    for p in plugins():
        for path in paths:
            if path.startswith("lib/cdclake/testing/"):  # the server its conformance driver starts
                driver = (ROOT / "tests" / "conformance" / f"{p.name}.py").read_text()
                if "cdclake.testing" not in driver:
                    missing.append(f"{p.name}: tests/conformance/{p.name}.py starts no server of cdclake.testing")
                continue
            names = (p.name, *p.types)
            if not any(list(ROOT.glob(path.replace("db9", n).replace("Db9", n.title()))) for n in names):
                missing.append(f"{p.name}: {path}")
    assert not missing, "docs/architecture.md lists files a source lacks:\n" + "\n".join(missing)


def test_a_source_is_its_roles_and_the_engine_never_asks_their_class() -> None:
    """The engine drives ``source.snapshot``/``source.log`` and never tests a source part's class."""
    from cdclake.spi import FrameLogReader, LogReader, RecordLogReader, SnapshotReader

    shapes = "|".join(c.__name__ for c in (LogReader, RecordLogReader, FrameLogReader, SnapshotReader)) + "|Source"
    pattern = re.compile(r"(isinstance|issubclass)\([^)]*\b(" + shapes + r")\b")
    found = [f"{path.relative_to(LIB)}:{n}" for path in sorted((LIB / "engine").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), start=1) if pattern.search(line)]
    assert not found, found
    for p in plugins():
        package = LIB / "sources" / p.name
        code = (package / "snapshot.py").read_text()
        assert re.search(r"^class \w+\((JdbcSnapshotReader|FlashbackRead)\)", code, re.M), \
            f"{p.name}: snapshot.py defines no snapshot reader on the kit"
        assert re.search(r"^class \w+\(\w*Connector\)", (package / "connection.py").read_text(), re.M), p.name


def test_the_architecture_doc_names_the_files_of_a_source() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for required in ("plugin.py", "config.py", "requirements.txt", "tests/conformance/"):
        assert required in doc, f"docs/architecture.md does not name {required}"
