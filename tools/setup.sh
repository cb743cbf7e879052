#!/usr/bin/env bash
# Idempotent set-up: system packages (the sources' test servers from tools/setup.d, sysbench), the virtualenvs (.venv for cdclake and
# Spark, .venv-airflow for Airflow 3), and the JVM jars.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
before_apt=()  # commands a source's set-up runs before apt installs its packages
command -v sysbench >/dev/null 2>&1 || need_apt+=(sysbench)
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)  # javac: cdclake's JVM code
# Each source's test servers: tools/setup.d/<source>.sh adds its Debian packages to need_apt.
for part in tools/setup.d/*.sh; do
  # shellcheck source=/dev/null
  source "$part"
done
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "cdclake setup: missing Debian packages ${need_apt[*]}; run 'make setup' as root or install them." >&2
    exit 1
  fi
  for step in "${before_apt[@]}"; do
    bash -c "$step"
  done
  echo "cdclake setup: installing ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The virtualenvs' packages go in with uv (PyPI's packages, resolved as pip does; downloads in parallel and
# a shared cache: a third of pip's time).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
[ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q 'uv>=0.5,<1'
uv_install() { .venv/bin/uv pip install -q --python "$@"; }
uv_install .venv/bin/python -e '.[test,quality,sources]'  # quality: Great Expectations; sources: every source's driver

# Delta's jars and each registered source's (python -m cdclake.jars lists them), fetched while Airflow
# installs (one Maven at a time: they share the local repository).
mkdir -p .cache/jars
.venv/bin/python -m cdclake.jars --testing > .cache/jars.txt  # --testing: the Db2 emulator's JDBC driver
fetch_jars() {
  while read -r coord; do
    case "$coord" in ''|'#'*) continue ;; esac
    IFS=: read -r group artifact version <<<"$coord"
    jar=".cache/jars/${artifact}-${version}.jar"
    [ -s "$jar" ] && continue
    echo "cdclake setup: fetching $coord"
    mvn -q -B dependency:copy -Dartifact="$coord" -DoutputDirectory=.cache/jars -Dmdep.overWriteIfNewer=true >/dev/null \
      || true
    [ -s "$jar" ] || { echo "cdclake setup: could not fetch $coord from Maven Central" >&2; return 1; }
  done < .cache/jars.txt
}
fetch_jars &
fetching=$!

# Bytecode written now: an environment with PYTHONDONTWRITEBYTECODE=1 (this machine's) never writes it on
# import, so every process (each cdclake command, each Spark Python worker) would compile its imports again:
# measured 2.1 s -> 0.8 s to import the command line's modules. Stale files are ignored (mtime check).
compile_bytecode() { "$1" -m compileall -q -j 0 "${@:2}" >/dev/null 2>&1 || true; }
compile_bytecode .venv/bin/python .venv/lib/python3*/site-packages lib &
compiling=$!

# Airflow 3 in its own virtualenv, with cdclake (no dependencies) for the DAG factory.
if [ ! -x .venv-airflow/bin/python ]; then
  python3 -m venv --without-pip .venv-airflow
fi
uv_install .venv-airflow/bin/python -r tools/airflow-requirements.txt
uv_install .venv-airflow/bin/python --no-deps -e .
wait "$compiling"
compile_bytecode .venv-airflow/bin/python .venv-airflow/lib/python3*/site-packages

wait "$fetching"

# cdclake's own JVM code (the Oracle decoder's fast path, the binlog split reader), compiled against
# pyspark's jars and the fetched ones.
jvm_jar=.cache/jars/cdclake-jvm.jar
if [ ! -s "$jvm_jar" ] || [ -n "$(find jvm/src -name '*.java' -newer "$jvm_jar")" ]; then
  rm -f "$jvm_jar"  # not on its own compile classpath
  echo "cdclake setup: compiling jvm/src -> $jvm_jar"
  pyspark_jars=$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
  rm -rf .cache/jvm-classes
  mkdir -p .cache/jvm-classes
  javac --release 17 -nowarn -d .cache/jvm-classes -cp "$pyspark_jars/*:.cache/jars/*" $(find jvm/src -name '*.java')
  jar cf "$jvm_jar" -C .cache/jvm-classes .
fi
echo "cdclake setup: ready (.venv, .cache/jars)"
