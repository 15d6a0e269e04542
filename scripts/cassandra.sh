#!/usr/bin/env bash
# A real, single-node Apache Cassandra 5.0 for people and tests (never a mock).
#
#   scripts/cassandra.sh start  DIR [LISTEN_ADDRESS]   # IPv4, default 127.0.0.1; waits for CQL
#   scripts/cassandra.sh stop   DIR                    # SIGTERM, up to 30 s, then SIGKILL; idempotent
#   scripts/cassandra.sh kill   DIR                    # SIGKILL at once (chaos)
#   scripts/cassandra.sh status DIR                    # exit 0 running and CQL ready, 1 running but
#                                                      # not (yet) ready, 3 not running
#
# DIR holds everything: cassandra.yaml, logback.xml, data/, commitlog/, ..., cassandra.log and
# cassandra.pid. Several instances may run at once with different DIRs and addresses (e.g. one per
# network namespace: `ip netns exec NS scripts/cassandra.sh start DIR 198.19.255.10`).
# The jars come from `mvn -pl test-cassandra package` (test-cassandra/target/cassandra.classpath).
#
# Environment: CASSANDRA_HEAP (default "-Xms256m -Xmx256m"), CASSANDRA_JAVA (a Java 17 binary),
# CASSANDRA_START_TIMEOUT (s, default 120), CASSANDRA_STOP_TIMEOUT (s, default 30),
# CASSANDRA_CLUSTER_NAME (default "cadastre-test"), CASSANDRA_JVM_OPTS (extra JVM flags),
# CASSANDRA_AUTHENTICATOR (default AllowAllAuthenticator; PasswordAuthenticator: clients log in,
# the default superuser cassandra/cassandra is created at once and start waits for it),
# CASSANDRA_CLIENT_KEYSTORE and CASSANDRA_CLIENT_KEYSTORE_PASSWORD (a PKCS12 key store: CQL clients
# must use TLS; cassandra.yaml is then mode 0600, since it holds the password), and with them
# CASSANDRA_CLIENT_TRUSTSTORE and CASSANDRA_CLIENT_TRUSTSTORE_PASSWORD (a PKCS12 trust store: CQL
# clients must present a certificate from its CA, require_client_auth).
#
# Only ever signals the PID in DIR/cassandra.pid, and only if that process is the Cassandra started
# with DIR/cassandra.yaml (a stale pid file whose PID was reused is ignored).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLASSPATH_FILE="$ROOT/test-cassandra/target/cassandra.classpath"
# Class data sharing: the classes a start loads, mapped from this archive instead of parsed and
# checked again (about 1.5 s of a 7 s start). Recorded by the first start after a build (at its
# JVM's exit: a stop, not a kill) into DIR, and moved here by that stop; the JVM ignores an archive
# of another class path or Java (a warning in cassandra.log) and starts without it.
CDS_ARCHIVE="$ROOT/test-cassandra/target/cassandra-classes.jsa"
NATIVE_PORT=9042
STORAGE_PORT=7000

die() { echo "cassandra.sh: $*" >&2; exit 1; }

usage() {
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The JPMS block and the Netty properties of Cassandra 5.0's conf/jvm17-server.options, verbatim
# (the cassandra-all jar does not ship conf/, and the distribution is not on Maven Central, so they are
# copied here). A newer copy of that file (trunk) also has `--add-opens java.base/java.nio=ALL-UNNAMED`;
# nothing run so far (DDL, prepared writes and reads, SIGKILL and commit-log replay) needed it: add
# it here if the log ever shows an InaccessibleObjectException on java.nio. Without this block
# Cassandra stops at once with an IllegalAccessException on sun.nio.ch.DirectBuffer.cleaner.
JVM17_SERVER_OPTIONS=(
  -Djdk.attach.allowAttachSelf=true
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
  --add-exports java.sql/java.sql=ALL-UNNAMED
  --add-exports java.base/java.lang.ref=ALL-UNNAMED
  --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
  --add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
  --add-opens java.base/java.lang.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
  --add-opens java.base/jdk.internal.math=ALL-UNNAMED
  --add-opens java.base/jdk.internal.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  -Dio.netty.tryReflectionSetAccessible=true
  -Dio.netty.allocator.useCacheForAllThreads=true
  -Dio.netty.allocator.maxOrder=11
)

# A Java 17: Cassandra 5.0 runs on 11 and 17 only, not on the Temurin 25 that may be installed.
find_java() {
  local candidates=()
  [[ -n "${CASSANDRA_JAVA:-}" ]] && candidates+=("$CASSANDRA_JAVA")
  candidates+=(/usr/lib/jvm/java-17-openjdk-amd64/bin/java /usr/lib/jvm/java-17-openjdk-arm64/bin/java)
  [[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME/bin/java")
  command -v java >/dev/null 2>&1 && candidates+=("$(command -v java)")
  local j v
  for j in "${candidates[@]}"; do
    [[ -x "$j" ]] || continue
    v="$("$j" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
    if [[ "$v" == 17 ]]; then echo "$j"; return 0; fi
  done
  die "no Java 17 found (tried: ${candidates[*]}); set CASSANDRA_JAVA"
}

# The PID from DIR/cassandra.pid if that process is alive and is our Cassandra; empty otherwise.
live_pid() {
  local dir="$1" pid
  [[ -f "$dir/cassandra.pid" ]] || return 0
  pid="$(tr -dc '0-9' < "$dir/cassandra.pid")"
  [[ -n "$pid" ]] || return 0
  # No `tr | grep -q` here: with pipefail, grep -q quitting early can SIGPIPE tr and fail the match.
  local cmdline
  cmdline="$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null)" || return 0
  if [[ $'\n'"$cmdline"$'\n' == *$'\n'"-Dcassandra.config=file://$dir/cassandra.yaml"$'\n'* ]]; then
    echo "$pid"
  fi
}

rpc_address() {
  awk '/^rpc_address:/ { print $2; exit }' "$1/cassandra.yaml" 2>/dev/null || true
}

port_open() { # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

cql_logged() { # dir
  grep -q 'Starting listening for CQL clients' "$1/cassandra.log" 2>/dev/null
}

log_tail() {
  echo "---- first errors in $1/cassandra.log ----" >&2
  grep -m 6 -E '^(ERROR|Caused by)|Exception: |Error: ' "$1/cassandra.log" >&2 2>/dev/null || true
  echo "---- last lines of $1/cassandra.log ----" >&2
  tail -n 40 "$1/cassandra.log" >&2 2>/dev/null || true
}

write_config() { # dir address
  local dir="$1" addr="$2"
  mkdir -p "$dir"/{data,commitlog,saved_caches,hints,cdc_raw,triggers}
  cat > "$dir/cassandra.yaml" <<EOF
# Written by scripts/cassandra.sh: a single test node.
cluster_name: '${CASSANDRA_CLUSTER_NAME:-cadastre-test}'
num_tokens: 1
initial_token: 0
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories:
  - $dir/data
commitlog_directory: $dir/commitlog
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
cdc_raw_directory: $dir/cdc_raw
# periodic: an acknowledged write can be lost on power loss; fine for tests, not for production.
commitlog_sync: periodic
commitlog_sync_period: 10000ms
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$addr:$STORAGE_PORT"
listen_address: $addr
rpc_address: $addr
storage_port: $STORAGE_PORT
native_transport_port: $NATIVE_PORT
start_native_transport: true
endpoint_snitch: SimpleSnitch
authenticator: ${CASSANDRA_AUTHENTICATOR:-AllowAllAuthenticator}
authorizer: AllowAllAuthorizer
auto_snapshot: false
concurrent_reads: 4
concurrent_writes: 4
concurrent_counter_writes: 4
concurrent_materialized_view_writes: 2
concurrent_compactors: 1
EOF
  if [[ -n "${CASSANDRA_CLIENT_KEYSTORE:-}" ]]; then
    chmod 600 "$dir/cassandra.yaml"
    cat >> "$dir/cassandra.yaml" <<EOF
client_encryption_options:
  enabled: true
  optional: false
  keystore: ${CASSANDRA_CLIENT_KEYSTORE}
  keystore_password: ${CASSANDRA_CLIENT_KEYSTORE_PASSWORD:-}
  store_type: PKCS12
EOF
    if [[ -n "${CASSANDRA_CLIENT_TRUSTSTORE:-}" ]]; then
      cat >> "$dir/cassandra.yaml" <<EOF
  require_client_auth: true
  truststore: ${CASSANDRA_CLIENT_TRUSTSTORE}
  truststore_password: ${CASSANDRA_CLIENT_TRUSTSTORE_PASSWORD:-}
EOF
    else
      echo "  require_client_auth: false" >> "$dir/cassandra.yaml"
    fi
  fi
  cat > "$dir/logback.xml" <<'EOF'
<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %logger{0}:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
EOF
}

wait_gone() { # pid seconds
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    (( SECONDS < deadline )) || return 1
    sleep 0.1
  done
}

cmd_start() {
  local dir="$1" addr="$2"
  local timeout="${CASSANDRA_START_TIMEOUT:-120}"
  local pid
  pid="$(live_pid "$dir")"
  [[ -z "$pid" ]] || die "already running in $dir (pid $pid); stop it first"
  [[ -f "$CLASSPATH_FILE" ]] || die "$CLASSPATH_FILE is missing: run 'mvn -pl test-cassandra package' in $ROOT first"
  local java
  java="$(find_java)"
  # A fresh roles table gets the default superuser shortly after CQL starts: wait for it, so that a
  # client logging in right after start is not refused. An existing one already has its roles.
  local await_superuser=0
  if [[ "${CASSANDRA_AUTHENTICATOR:-}" == PasswordAuthenticator ]] && ! compgen -G "$dir/data/system_auth/roles-*" >/dev/null; then
    await_superuser=1
  fi
  write_config "$dir" "$addr"
  rm -f "$dir/cassandra.pid"
  # shellcheck disable=SC2206 # CASSANDRA_HEAP and CASSANDRA_JVM_OPTS are word lists by design
  local heap=(${CASSANDRA_HEAP:--Xms256m -Xmx256m}) extra=(${CASSANDRA_JVM_OPTS:-})
  local cds="-XX:ArchiveClassesAtExit=$dir/classes.jsa"
  if [[ -s "$CDS_ARCHIVE" && "$CDS_ARCHIVE" -nt "$CLASSPATH_FILE" ]]; then
    cds="-XX:SharedArchiveFile=$CDS_ARCHIVE"
  fi
  local started=$SECONDS t0=${EPOCHREALTIME/./}
  # A single node has no peers: skip_wait_for_gossip_to_settle=0 drops the 8 s "Waiting for gossip
  # to settle" before CQL starts (it happens on a non-loopback address, e.g. in a netns); the two
  # shutdown properties drop the 2 s "announce shutdown" sleep and the 2 s internode-messaging
  # quiesce (SIGTERM stop ~6.4 s -> ~2 s); superuser_setup_delay_ms=0 creates the default superuser
  # (PasswordAuthenticator) at once instead of 10 s after start; flush_local_schema_changes=false
  # leaves a schema change's tables in memory and the commit log instead of flushing them after each
  # statement (the schema's 10 statements: 4.5-5.5 s -> 3.5 s; a SIGKILL replays them from the log).
  # setsid: its own session, so a Ctrl-C or a process-group kill aimed at the caller does not hit
  # it; stdin/stdout/stderr detached, so a caller reading this script's output gets EOF at exit.
  setsid "$java" "${heap[@]}" -Xss256k -XX:+ExitOnOutOfMemoryError -Djava.net.preferIPv4Stack=true \
    "${JVM17_SERVER_OPTIONS[@]}" \
    "-Dcassandra.config=file://$dir/cassandra.yaml" \
    -Dcassandra-foreground=yes \
    "-Dcassandra.storagedir=$dir" \
    "-Dcassandra.logdir=$dir" \
    "-Dcassandra.triggers_dir=$dir/triggers" \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.shutdown_announce_in_ms=0 \
    -Dcassandra.test.messagingService.nonGracefulShutdown=true \
    -Dcassandra.superuser_setup_delay_ms=0 \
    -Dcassandra.test.flush_local_schema_changes=false \
    "-Dlogback.configurationFile=$dir/logback.xml" \
    "$cds" \
    "${extra[@]}" \
    -cp "$(cat "$CLASSPATH_FILE")" \
    org.apache.cassandra.service.CassandraDaemon \
    < /dev/null > "$dir/cassandra.log" 2>&1 &
  pid=$!
  echo "$pid" > "$dir/cassandra.pid"
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$dir/cassandra.pid"
      echo "cassandra.sh: Cassandra (pid $pid) died during start" >&2
      log_tail "$dir"; exit 1
    fi
    if cql_logged "$dir" && port_open "$addr" "$NATIVE_PORT" &&
       { (( ! await_superuser )) || grep -q 'Created default superuser role' "$dir/cassandra.log" 2>/dev/null; }; then
      local ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
      echo "Cassandra ready: pid $pid, CQL at $addr:$NATIVE_PORT, after $((ms / 1000)).$(printf %03d $((ms % 1000))) s (log: $dir/cassandra.log)"
      return 0
    fi
    if (( SECONDS - started >= timeout )); then
      echo "cassandra.sh: Cassandra (pid $pid) not CQL-ready at $addr:$NATIVE_PORT after ${timeout} s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 10 || true
      rm -f "$dir/cassandra.pid"
      log_tail "$dir"; exit 1
    fi
    sleep 0.25
  done
}

cmd_stop() {
  local dir="$1" pid
  pid="$(live_pid "$dir")"
  if [[ -z "$pid" ]]; then
    rm -f "$dir/cassandra.pid"; echo "not running ($dir)"; return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_gone "$pid" "${CASSANDRA_STOP_TIMEOUT:-30}"; then
    echo "cassandra.sh: pid $pid still alive after SIGTERM; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || die "pid $pid survived SIGKILL"
    rm -f "$dir/classes.jsa" # maybe cut short
  fi
  rm -f "$dir/cassandra.pid"
  if [[ -s "$dir/classes.jsa" ]]; then
    # Renamed into place whole: a start that runs meanwhile maps the old archive or none.
    cp "$dir/classes.jsa" "$CDS_ARCHIVE.$$" && mv -f "$CDS_ARCHIVE.$$" "$CDS_ARCHIVE"
    rm -f "$dir/classes.jsa"
  fi
  echo "stopped (pid $pid)"
}

cmd_kill() {
  local dir="$1" pid
  pid="$(live_pid "$dir")"
  if [[ -z "$pid" ]]; then
    rm -f "$dir/cassandra.pid"; echo "not running ($dir)"; return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  wait_gone "$pid" 10 || die "pid $pid survived SIGKILL"
  rm -f "$dir/cassandra.pid" "$dir/classes.jsa"
  echo "killed (pid $pid)"
}

cmd_status() {
  local dir="$1" pid addr
  pid="$(live_pid "$dir")"
  if [[ -z "$pid" ]]; then echo "not running ($dir)"; return 3; fi
  addr="$(rpc_address "$dir")"
  if cql_logged "$dir" && port_open "$addr" "$NATIVE_PORT"; then
    echo "running: pid $pid, CQL ready at $addr:$NATIVE_PORT"
  else
    echo "running: pid $pid, CQL not ready at $addr:$NATIVE_PORT"; return 1
  fi
}

(( $# >= 2 )) || usage
cmd="$1"
[[ -n "$2" ]] || usage
[[ "$cmd" != start ]] || mkdir -p "$2"
DIR="$(realpath -m -- "$2")"
case "$cmd" in
  start)  cmd_start "$DIR" "${3:-127.0.0.1}" ;;
  stop)   cmd_stop "$DIR" ;;
  kill)   cmd_kill "$DIR" ;;
  status) cmd_status "$DIR" ;;
  *)      usage ;;
esac
