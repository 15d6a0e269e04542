#!/usr/bin/env bash
# A 3-host Cadastre cluster on one machine: three host network namespaces on a test fabric
# (scripts/topology.sh), a real Cassandra in its own namespace (scripts/cassandra.sh), one
# cadastre-agent per host (a Pekko cluster on Cassandra), and pods attached on each host.
#
#   scripts/cluster-demo.sh            up, attach one pod per host, show that the pod on host1
#                                      reaches the others, tear everything down
#   scripts/cluster-demo.sh up         start the cluster and leave it running
#   scripts/cluster-demo.sh attach H P attach pod P on host H (1-3), print the CNI result, and ping
#                                      every other pod attached (IPv4 and IPv6) from it
#   scripts/cluster-demo.sh detach H P
#   scripts/cluster-demo.sh down       stop everything it started (by PID) and remove the namespaces
#
# Needs root, a build (mvn -B -DskipTests package, which also fetches Cassandra for test-cassandra),
# iproute2, openssl, busybox (ping). Addresses: hosts 198.19.255.11-13 (fd00:19:255::11-13),
# Cassandra 198.19.255.9, pods from 198.18.0.0/16 and fd00:198::/48. Each agent routes to the
# others' blocks (cadastre.routing, cross-subnet: here all direct, one L2 segment).
# The agents authenticate each other with mutual TLS (README, "Securing the cluster"): a throw-away
# CA and a certificate per host are made with openssl under $state/pki (mode 0600, removed by down).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name=cademo
state=/tmp/cadastre-cluster-demo
hosts=3
java_bin="${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java"
[[ -x "$java_bin" ]] || java_bin=java
classpath() { echo "$(ls "$root"/cluster/target/cadastre-cluster-*.jar | grep -v -- '-tests\.jar$' | head -1):$root/cluster/target/lib/*"; }

agent() { # agent HOST ARGS...: runs cadastre-agent inside host HOST's namespace with the cluster's env
  local h=$1; shift
  ip netns exec "$name-h$h" env CADASTRE_PERSISTENCE=cassandra CADASTRE_CASSANDRA_CONTACT_POINTS=198.19.255.9:9042 \
    CADASTRE_NODE_NAME="host$h" CADASTRE_CLUSTER_HOSTNAME="198.19.255.$((10 + h))" CADASTRE_CLUSTER_PORT=2552 \
    CADASTRE_SEED_NODES="pekko://cadastre@198.19.255.11:2552,pekko://cadastre@198.19.255.12:2552,pekko://cadastre@198.19.255.13:2552" CADASTRE_DATA_DIR="$state/h$h/data" \
    CADASTRE_CNI_SOCKET="$state/h$h/cni.sock" CADASTRE_CLUSTER_TLS_CA_FILE="$state/pki/ca.crt" \
    CADASTRE_CLUSTER_TLS_CERT_FILE="$state/pki/host$h.crt" CADASTRE_CLUSTER_TLS_KEY_FILE="$state/pki/host$h.key" \
    "$java_bin" -Xmx256m -DCADASTRE_LOG_FORMAT=text -cp "$(classpath)" io.cadastre.agent.AgentMain "$@"
}

pki() { # a CA and, per host, an RSA key and a certificate: CN cadastre-hostN, SANs DNS:cadastre-cluster (the
         # name every member's certificate shares) and the host's address, for TLS client and server
  local dir="$state/pki" h
  ( umask 077; mkdir -p "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj "/CN=cadastre-demo-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
    for h in $(seq 1 $hosts); do
      openssl req -newkey rsa:2048 -nodes -subj "/CN=cadastre-host$h" -keyout "$dir/host$h.key" -out "$dir/host$h.csr" 2>/dev/null
      printf 'subjectAltName=DNS:cadastre-cluster,IP:198.19.255.%d\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=critical,CA:FALSE\n' \
        $((10 + h)) > "$dir/host$h.ext"
      openssl x509 -req -sha256 -days 2 -in "$dir/host$h.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
        -extfile "$dir/host$h.ext" -out "$dir/host$h.crt" 2>/dev/null
    done
    rm -f "$dir"/*.csr "$dir"/*.ext "$dir/ca.srl" )
}

cni() { # cni VERB HOST POD
  echo '{"cniVersion":"1.1.0","name":"cadastre","type":"cadastre","agentSocket":"'"$state/h$2/cni.sock"'"}' |
    env -i CNI_COMMAND="$1" CNI_CONTAINERID="$3" CNI_NETNS="/var/run/netns/$name-pod-$3" CNI_IFNAME=eth0 \
      CNI_PATH="$root/cni-bridge/target" "$root/cni-bridge/target/cadastre"
}

up() {
  [[ $EUID -eq 0 ]] || { echo "run as root" >&2; exit 1; }
  [[ -f "$root/test-cassandra/target/cassandra.classpath" && -d "$root/cluster/target/lib" ]] ||
    { echo "build first: mvn -B -DskipTests package" >&2; exit 1; }
  mkdir -p "$state"
  echo "== a CA and member certificates (openssl) in $state/pki"
  pki
  "$root/scripts/topology.sh" up "$name" "$hosts"
  echo "== Cassandra in $name-db (198.19.255.9)"
  ip netns exec "$name-db" "$root/scripts/cassandra.sh" start "$state/cassandra" 198.19.255.9
  echo "== schema (cadastre-agent schema --execute)"
  agent 1 schema --execute 2>/dev/null
  for h in $(seq 1 $hosts); do
    mkdir -p "$state/h$h"
    agent "$h" >"$state/h$h/agent.log" 2>&1 &
    echo $! >"$state/h$h/agent.pid"
    [[ $h == 1 ]] && wait_socket 1
  done
  for h in $(seq 2 $hosts); do wait_socket "$h"; done
  echo "== cluster up: agents on host1..host$hosts; logs in $state/h*/agent.log"
}

wait_socket() {
  for _ in $(seq 1 480); do
    [[ -S "$state/h$1/cni.sock" ]] && return 0
    kill -0 "$(cat "$state/h$1/agent.pid")" 2>/dev/null || { tail -20 "$state/h$1/agent.log"; return 1; }
    sleep 0.25
  done
  echo "host$1: no socket after 120 s" >&2; tail -20 "$state/h$1/agent.log"; return 1
}

attach() {
  ip netns add "$name-pod-$2"
  echo "== ADD pod $2 on host$1"
  cni ADD "$1" "$2"; echo
  ip -n "$name-pod-$2" -br addr show eth0
  reach "$2"
}

# reach POD: pings every other pod's addresses from POD (a new block's route reaches the other
# hosts within milliseconds; the first echo may wait for neighbour discovery)
reach() {
  local from="$name-pod-$1" other a ok
  for other in $(ip netns list | awk '{print $1}' | grep "^$name-pod-" | grep -vx "$from"); do
    for a in $(ip -n "$other" -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1); do
      ok=no
      for _ in 1 2 3 4 5; do
        if ip netns exec "$from" busybox ping -c1 -W1 "$a" >/dev/null 2>&1; then ok=yes; break; fi
      done
      printf '   %s -> %s (%s): %s\n' "${from#"$name"-pod-}" "${other#"$name"-pod-}" "$a" \
        "$([[ $ok == yes ]] && echo reached || echo UNREACHABLE)"
    done
  done
}

detach() {
  cni DEL "$1" "$2" && ip netns del "$name-pod-$2" && echo "pod $2 detached from host$1"
}

down() {
  set +e
  for pod in $(ip netns list | awk '{print $1}' | grep "^$name-pod-"); do ip netns del "$pod"; done
  for h in $(seq 1 $hosts); do
    pid=$(cat "$state/h$h/agent.pid" 2>/dev/null) && kill -TERM "$pid" 2>/dev/null
  done
  for h in $(seq 1 $hosts); do
    pid=$(cat "$state/h$h/agent.pid" 2>/dev/null) && for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  done
  [[ -d "$state/cassandra" ]] && "$root/scripts/cassandra.sh" stop "$state/cassandra"
  "$root/scripts/topology.sh" down "$name"
  rm -rf "$state"
  echo "== down"
}

case "${1:-demo}" in
  up) up ;;
  attach) attach "$2" "$3" ;;
  detach) detach "$2" "$3" ;;
  down) down ;;
  demo)
    trap down EXIT
    up
    for h in $(seq 1 $hosts); do attach "$h" "pod$h"; done
    echo "== each host end lives in its own host namespace:"
    for h in $(seq 1 $hosts); do echo "host$h: $(ip -n "$name-h$h" -br link | grep -c '^cad') pod veth(s)"; done
    echo "== host1's routes to the other hosts' blocks (Cadastre's, protocol 202; blackholes for its own):"
    ip -n "$name-h1" route show proto 202; ip -n "$name-h1" -6 route show proto 202
    echo "== the pod on host1 reaches the pods on host2 and host3:"
    reach pod1
    for h in $(seq 1 $hosts); do detach "$h" "pod$h"; done
    ;;
  *) echo "usage: $0 [up|attach HOST POD|detach HOST POD|down]" >&2; exit 2 ;;
esac
