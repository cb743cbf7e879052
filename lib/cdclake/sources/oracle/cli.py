"""``cdclake redo-parse``: the Oracle source's own command (registered by :mod:`.plugin`)."""

from __future__ import annotations

import sys
from typing import Any

import click


@click.command("redo-parse")
def redo_parse() -> None:
    """Parse Oracle LogMiner SQL_REDO statements read from stdin, one per line.

    Prints one JSON object per statement (blank lines are skipped):
    {"op": "c"|"u"|"d", "schema", "table", "before", "after"}; a value LogMiner did not supply
    (Unsupported Type) prints as {"unavailable": true}. A line that does not parse prints
    {"error": reason, "line": N, "statement": first 200 characters} and parsing goes on with the
    next line.

    Exit status: 0 if every statement parsed, 1 if any line failed.
    """
    import orjson

    from cdclake.sources.oracle.redo import UNAVAILABLE, RedoParseError, parse_redo

    def default(value: Any) -> Any:
        if value is UNAVAILABLE:
            return {"unavailable": True}
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    out = sys.stdout.buffer
    failed = 0
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line.strip():
            continue
        try:
            r = parse_redo(line)
            doc: dict[str, Any] = {"op": r.op, "schema": r.schema, "table": r.table, "before": r.before,
                                   "after": r.after}
        except RedoParseError as exc:
            failed += 1
            doc = {"error": exc.reason, "line": number, "statement": line[:200]}
        out.write(orjson.dumps(doc, default=default) + b"\n")
    out.flush()
    if failed:
        sys.exit(1)
