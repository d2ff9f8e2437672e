#!/usr/bin/env bash
# Makes sure the database servers the tests use answer on loopback:
# PostgreSQL on 127.0.0.1:5432 (user postgres, no password) and MariaDB on
# 127.0.0.1:3306 (user root, no password), each with a database named "test".
# Installs the Debian packages the tests need (including galera-4 and rsync
# for the Galera cluster, iptables for the tests that partition a private
# one, chromium for the dashboard's browser tests) only when they are
# missing, and starts a server only when it does not answer. Idempotent;
# takes well under a second when everything is already up.
#
# Run it (bash scripts/services.sh) or source it (scripts/test does): sourcing
# runs the same set-up and leaves the voltro_* functions defined.
# Debian 12 as root is assumed for installing and starting; as another user
# it only checks and reports. Sourcing also sets -euo pipefail in the caller.
set -euo pipefail

VOLTRO_PACKAGES=(postgresql mariadb-server mariadb-client galera-4 rsync iproute2 util-linux chromium iptables)

voltro_log() { echo "services: $*" >&2; }

# voltro_wait SECONDS CMD... polls CMD until it succeeds or SECONDS pass.
voltro_wait() {
	local limit=$1
	shift
	local deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			return 1
		fi
		sleep 0.2
	done
}

voltro_install_packages() {
	local missing=() p
	for p in "${VOLTRO_PACKAGES[@]}"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	if ((EUID != 0)); then
		voltro_log "missing packages ${missing[*]}; run as root to install them"
		return 1
	fi
	voltro_log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

voltro_pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432 -t 2; }
voltro_pg_sql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atc "$1"; }

# voltro_pg_version prints the newest PostgreSQL version with a "main" cluster.
voltro_pg_version() {
	local dirs=(/etc/postgresql/*/main)
	[[ -d ${dirs[0]} ]] || return 0
	printf '%s\n' "${dirs[@]}" | awk -F/ '{print $4}' | sort -V | tail -n 1
}

voltro_postgres() {
	if ! voltro_pg_ready; then
		local version
		version=$(voltro_pg_version)
		if [[ -z $version ]]; then
			voltro_log "no PostgreSQL cluster under /etc/postgresql"
			return 1
		fi
		voltro_log "starting PostgreSQL $version"
		pg_ctlcluster --skip-systemctl-redirect "$version" main start
		if ! voltro_wait 60 voltro_pg_ready; then
			voltro_log "PostgreSQL does not answer on 127.0.0.1:5432"
			return 1
		fi
	fi
	if ! voltro_pg_sql 'SELECT 1' >/dev/null 2>&1; then
		# A fresh Debian cluster asks for a password over TCP: trust loopback.
		local version hba
		version=$(voltro_pg_version)
		hba=/etc/postgresql/$version/main/pg_hba.conf
		voltro_log "allowing passwordless loopback connections in $hba"
		sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
		runuser -u postgres -- psql -X -q -c 'SELECT pg_reload_conf()' >/dev/null
		voltro_wait 10 voltro_pg_sql 'SELECT 1' || {
			voltro_log "cannot connect to PostgreSQL as postgres on 127.0.0.1:5432"
			return 1
		}
	fi
	if [[ $(voltro_pg_sql "SELECT 1 FROM pg_database WHERE datname = 'test'") != 1 ]]; then
		voltro_pg_sql 'CREATE DATABASE test'
	fi
}

voltro_my_ready() { mariadb-admin --no-defaults --protocol=tcp -h 127.0.0.1 -P 3306 --connect-timeout=2 ping; }
voltro_my_sql() { mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P 3306 -u root --connect-timeout=5 -Nse "$1"; }

voltro_mariadb() {
	if ! voltro_my_ready >/dev/null 2>&1; then
		voltro_log "starting MariaDB"
		install -d -o mysql -g mysql /run/mysqld
		# --pidfile: other mariadbd processes (Galera test nodes) must not
		# count as "already running".
		start-stop-daemon --start --oknodo --background --pidfile /run/mysqld/mysqld.pid \
			--exec /usr/sbin/mariadbd -- --user=mysql
		if ! voltro_wait 60 voltro_my_ready; then
			voltro_log "MariaDB does not answer on 127.0.0.1:3306"
			return 1
		fi
	fi
	if ! voltro_my_sql 'SELECT 1' >/dev/null 2>&1; then
		# Debian's root uses unix_socket only: let root in over loopback TCP.
		voltro_log "allowing passwordless root over loopback TCP in MariaDB"
		mariadb -u root -e "
			ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
			CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED BY '';
			GRANT ALL PRIVILEGES ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;"
		voltro_my_sql 'SELECT 1' >/dev/null || {
			voltro_log "cannot connect to MariaDB as root on 127.0.0.1:3306"
			return 1
		}
	fi
	voltro_my_sql 'CREATE DATABASE IF NOT EXISTS test'
}

voltro_services_up() {
	local t0=$SECONDS
	voltro_install_packages || return 1
	voltro_postgres || return 1
	voltro_mariadb || return 1
	voltro_log "PostgreSQL and MariaDB answer ($((SECONDS - t0)) s)"
}

voltro_services_up
