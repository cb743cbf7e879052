# cdclake — the two commands the README opens with are `make demo` and `make test`.
PY      := .venv/bin/python
STAMP   := .venv/.cdclake-setup

.PHONY: setup demo test lint bench clean

setup: $(STAMP)

$(STAMP): setup.py tools/setup.sh tools/jars.txt
	bash tools/setup.sh
	touch $(STAMP)

demo: setup
	.venv/bin/cdclake demo

test: setup
	$(PY) -m ruff check lib jobs tests benchmarks airflow_dags
	$(PY) -m pytest -q tests

lint: setup
	$(PY) -m ruff check lib jobs tests benchmarks airflow_dags

bench: setup
	$(PY) benchmarks/run_mysql_bench.py

clean:
	rm -rf .venv .cache/jars
