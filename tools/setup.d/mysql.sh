# The MySQL/MariaDB source's tests start their own throwaway MariaDB servers (cdclake.testing.mariadb).
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server mariadb-client)
