# Sourced by scripts/test and scripts/bench: starts a throw-away PostgreSQL
# in a temporary directory on a free loopback port and exports
# SUBAGENTCTX_TEST_POSTGRES_DSN; pg_stop stops it and removes the directory.
# PostgreSQL refuses to run as root, so as root it runs as the postgres user.

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

pg_install() {
  if ! pg_bin >/dev/null; then
    echo "PostgreSQL not found: installing it with apt-get" >&2
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
  fi
  pg_bin >/dev/null || { echo "PostgreSQL is still missing after apt-get" >&2; return 1; }
}

pg_as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
  pg_install || return 1
  local bin; bin=$(pg_bin)
  PG_DIR=$(mktemp -d /tmp/subagentctx-pg.XXXXXX)
  chmod 755 "$PG_DIR"
  [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
  pg_as_owner "$bin/initdb" -D "$PG_DIR/data" -U postgres -A trust --no-sync -E UTF8 >"$PG_DIR/initdb.log" 2>&1 ||
    { cat "$PG_DIR/initdb.log" >&2; return 1; }
  local try port
  for try in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + RANDOM % 30000 ))
    if pg_as_owner "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start \
        -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" >/dev/null 2>&1; then
      PG_PORT=$port
      export SUBAGENTCTX_TEST_POSTGRES_DSN="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
      export SUBAGENTCTX_TEST_PG_BIN="$bin" SUBAGENTCTX_TEST_PG_DATA="$PG_DIR/data"
      echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port ($PG_DIR)" >&2
      return 0
    fi
  done
  cat "$PG_DIR/server.log" >&2
  return 1
}

pg_stop() {
  [ -n "${PG_DIR:-}" ] || return 0
  pg_as_owner "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=
}

# citus_start starts a throw-away Citus cluster on loopback — a coordinator
# and two workers, each a PostgreSQL server of its own — when the Citus
# extension is installed for this PostgreSQL, and exports
# SUBAGENTCTX_TEST_CITUS_DSN (the coordinator's postgres database). Without
# Citus it says so and the cluster suites skip. citus_stop stops it.
citus_installed() { [ -f "$("$(pg_bin)/pg_config" --pkglibdir 2>/dev/null || echo /nonexistent)/citus.so" ]; }

citus_start() {
  local bin; bin=$(pg_bin) || return 1
  if ! citus_installed; then
    echo "Citus is not installed for PostgreSQL $("$bin/postgres" --version | awk '{print $3}'): the Citus cluster suites are skipped" >&2
    return 0
  fi
  CITUS_DIR=$(mktemp -d /tmp/subagentctx-citus.XXXXXX)
  chmod 755 "$CITUS_DIR"
  [ "$(id -u)" = 0 ] && chown postgres "$CITUS_DIR"
  local i port ports=() try
  for i in 0 1 2; do
    pg_as_owner "$bin/initdb" -D "$CITUS_DIR/n$i" -U postgres -A trust --no-sync -E UTF8 >"$CITUS_DIR/initdb$i.log" 2>&1 ||
      { cat "$CITUS_DIR/initdb$i.log" >&2; return 1; }
    for try in 1 2 3 4 5 6 7 8; do
      port=$(( 20000 + RANDOM % 30000 ))
      if pg_as_owner "$bin/pg_ctl" -D "$CITUS_DIR/n$i" -l "$CITUS_DIR/n$i.log" -w -t 60 start \
          -o "-p $port -k $CITUS_DIR -c listen_addresses=127.0.0.1 -c shared_preload_libraries=citus -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c max_prepared_transactions=200" >/dev/null 2>&1; then
        ports+=("$port"); break
      fi
    done
    [ "${#ports[@]}" = $((i + 1)) ] || { cat "$CITUS_DIR/n$i.log" >&2; return 1; }
    "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "CREATE EXTENSION citus" >/dev/null
  done
  "$bin/psql" -X -q -h 127.0.0.1 -p "${ports[0]}" -U postgres -d postgres \
    -c "SELECT citus_set_coordinator_host('127.0.0.1', ${ports[0]})" \
    -c "SELECT citus_add_node('127.0.0.1', ${ports[1]})" -c "SELECT citus_add_node('127.0.0.1', ${ports[2]})" >/dev/null
  CITUS_PORTS="${ports[*]}"
  export SUBAGENTCTX_TEST_CITUS_DSN="postgres://postgres@127.0.0.1:${ports[0]}/postgres?sslmode=disable"
  echo "Citus $("$bin/psql" -X -A -t -h 127.0.0.1 -p "${ports[0]}" -U postgres -d postgres -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"): coordinator 127.0.0.1:${ports[0]}, workers ${ports[1]} and ${ports[2]} ($CITUS_DIR)" >&2
}

citus_stop() {
  [ -n "${CITUS_DIR:-}" ] || return 0
  local i
  for i in 0 1 2; do
    pg_as_owner "$(pg_bin)/pg_ctl" -D "$CITUS_DIR/n$i" -m immediate stop >/dev/null 2>&1 || true
  done
  rm -rf "$CITUS_DIR"
  CITUS_DIR=
}
