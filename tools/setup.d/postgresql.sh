# PostgreSQL's server binaries: the tests start their own throwaway clusters (cdclake.testing.postgres).
if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
  need_apt+=(postgresql)
  # only the binaries: no system-wide cluster is created (tests never use one)
  before_apt+=("mkdir -p /etc/postgresql-common/createcluster.d && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/cdclake.conf")
fi
