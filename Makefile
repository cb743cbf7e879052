# cdclake — the two commands the README opens with are `make demo` and `make test`.
PY      := .venv/bin/python
# pytest-xdist workers of make test (each has its own Spark session and MariaDB server)
TEST_WORKERS ?= 2
STAMP   := .venv/.cdclake-setup

.PHONY: setup demo test lint bench bench-db2 bench-postgres bench-oracle bench-floor test-oracle-live test-db2-live clean

setup: $(STAMP)

$(STAMP): setup.py tools/setup.sh $(wildcard tools/setup.d/*.sh) lib/cdclake/jars.py tools/airflow-requirements.txt $(wildcard jvm/src/cdclake/*/*.java) \
          $(wildcard lib/cdclake/sources/*/plugin.py lib/cdclake/sources/*/requirements.txt)
	bash tools/setup.sh
	touch $(STAMP)

demo: setup
	.venv/bin/cdclake demo

test: setup
	$(PY) -m ruff check lib jobs tests tests_live benchmarks airflow_dags
	.venv/bin/lint-imports --no-logo
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=40 tests

lint: setup
	$(PY) -m ruff check lib jobs tests tests_live benchmarks airflow_dags
	.venv/bin/lint-imports --no-logo

# Every issue-17 figure: small runs, MySQL windows of 100k and 1M changes (1M on one core too), the Oracle
# window of 640k and 1.9M LogMiner rows; each against its floor in the same run (~45 min on 2 cores).
bench: setup
	$(PY) benchmarks/run_small_runs.py
	$(PY) benchmarks/run_mysql_bench.py
	$(PY) benchmarks/run_mysql_bench.py --events 250000 --no-pylib --merge-factor 1 --out benchmarks/out/results-1m.json
	$(PY) benchmarks/run_mysql_bench.py --events 250000 --no-pylib --merge-factor 1 --master 'local[1]' \
		--out benchmarks/out/results-1m-local1.json
	$(PY) benchmarks/run_oracle_bench.py --rows 20000 --txns 100000
	$(PY) benchmarks/run_oracle_bench.py --rows 20000 --txns 300000

# The Db2 source over the capture emulator: a 1,000,000-row CD window end to end, and its read phase on one
# core and on two (~6 min).
bench-db2: setup
	$(PY) benchmarks/run_db2_bench.py --master 'local[2]'
	$(PY) benchmarks/run_db2_bench.py --master 'local[1]'

# The PostgreSQL source: a 1,000,000-change window end to end against the server's own readers of the same changes
# (peek, pg_recvlogical) and cdclake's pgoutput decoder alone; the lake compared with the source.
bench-postgres: setup
	$(PY) benchmarks/run_postgres_bench.py

bench-oracle: setup
	$(PY) benchmarks/run_oracle_bench.py

bench-floor: setup
	$(PY) benchmarks/run_spark_floor.py

# Opt-in: the Oracle scenarios against a real database (CDCLAKE_ORACLE_* variables, docs/oracle.md).
test-oracle-live: setup
	$(PY) -m pytest -q -p no:cacheprovider --rootdir . tests_live/test_oracle_live.py

# Opt-in: the Db2 capture-emulator scenarios against a real Db2 with ASN Capture (CDCLAKE_DB2_* variables,
# docs/db2.md, 'The live suite'; the server's set-up: tests_live/db2_setup.sql).
test-db2-live: setup
	$(PY) -m pytest -q -p no:cacheprovider --rootdir . tests_live/test_db2_live.py

clean:
	rm -rf .venv .venv-airflow .cache/jars
