"""The documentation test's parts (tests/doc_commands.py): what counts as a documented command, and when a
recorded run covers it. The check itself runs at the end of `make test` (tests/conftest.py)."""

from __future__ import annotations

import doctest

from tests import doc_commands
from tests.doc_commands import ILLUSTRATIONS, documentation, documented, illustration, parse, uncovered


def test_the_module_examples_hold() -> None:
    assert doctest.testmod(doc_commands).failed == 0


def test_code_blocks_and_inline_spans_are_found_with_required_and_optional_flags() -> None:
    text = """Intro `cdclake backfill --config f.yaml --table t [--where 'id < 5']` and `make demo`.

```bash
export A=1   # not a command
# a comment
cdclake snapshot --config f.yaml [--tables 'a\\.b'] [--force]  # trailing comment
.venv-airflow/bin/airflow dags trigger x \\
    --conf '{"a": 1}'
```

```yaml
cdclake: not a command in a YAML block
```
"""
    found = {c.key: c for c in documented("x.md", text)}
    assert sorted(found) == ["airflow dags trigger", "cdclake backfill", "cdclake snapshot", "make demo"]
    snapshot, backfill = found["cdclake snapshot"], found["cdclake backfill"]
    assert snapshot.flags == {"--config"} and snapshot.optional == {"--tables", "--force"}
    assert backfill.flags == {"--config", "--table"} and backfill.optional == {"--where"}
    assert found["airflow dags trigger"].flags == {"--conf"} and snapshot.where == "x.md:6"


def test_a_command_is_covered_by_a_run_with_its_flags_and_each_optional_one() -> None:
    shown = [parse("cdclake reconcile --config f [--repair] [--json]", "d.md:1")]
    assert uncovered(shown, []) == ["d.md:1: cdclake reconcile --config f [--repair] [--json] "
                                    "(no test runs `cdclake reconcile` with --config)"]
    ran = [parse("cdclake reconcile --config /tmp/x.yaml --repair")]
    assert uncovered(shown, ran) == ["d.md:1: cdclake reconcile --config f [--repair] [--json] "
                                     "(no test runs it with --json)"]
    ran.append(parse("cdclake reconcile --json --config /tmp/y.yaml --table t"))
    assert uncovered(shown, ran) == []
    assert uncovered([parse("cdclake status", "d.md:2")], [parse("cdclake status --config c --json")]) == []
    assert uncovered([parse("make bench", "d.md:3")], []) == []  # an illustration
    assert uncovered([parse("cdclake --debug ...", "d.md:4")], [parse("cdclake --debug mine --config c")]) == []
    submitted = parse("/usr/bin/spark-submit --master local[2] /tmp/checkout/jobs/mine.py --config /tmp/c.yaml")
    assert submitted.key == "spark-submit jobs/mine.py"
    assert uncovered([parse("spark-submit jobs/mine.py --config shop.yaml", "d.md:5")], [submitted]) == []


def test_the_documentation_has_its_commands_and_every_illustration_is_used_and_says_why() -> None:
    shown = documentation()
    keys = {c.key for c in shown}
    assert {"make demo", "spark-submit jobs/mine.py", "airflow dags test", "cdclake backfill"} <= keys
    used = {k for k in ILLUSTRATIONS if any(illustration(c) == ILLUSTRATIONS[k] for c in shown)}
    assert used == set(ILLUSTRATIONS), f"illustrations no documented command needs: {set(ILLUSTRATIONS) - used}"
    assert all(len(reason.split()) >= 4 for reason in ILLUSTRATIONS.values())
