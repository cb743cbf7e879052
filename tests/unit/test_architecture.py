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


def test_the_architecture_doc_names_the_files_of_a_source() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for required in ("plugin.py", "config.py", "requirements.txt", "tests/conformance/"):
        assert required in doc, f"docs/architecture.md does not name {required}"
