#!/usr/bin/env bash
# One host, end to end, as a container runtime would do it: build, start a cadastre-agent on the
# embedded journal, install the plugin, create a network namespace (the "pod"), run CNI ADD, show
# the result and what the namespace got, run DEL, and clean up everything it made.
# Needs root (network namespaces): as root it runs at once, otherwise it runs itself again through
# sudo. Installs what it uses when missing: Java 17, Maven, gcc and iproute2 (`ip` is used here
# only to create the namespace and to show its contents; Cadastre itself speaks netlink).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/host.sh"
become_root demo "it creates a network namespace" "$@"
cd "$root"
install_missing demo openjdk-17-jdk-headless maven gcc libc6-dev musl-dev iproute2
# openjdk-17 from 17.0.17 on: older ones lack the fix of JDK-8351933, with which a ForkJoinPool (every
# Pekko dispatcher) may stop for good; the agent warns on them (JavaRuntimeCheck).
upgrade_older demo 17.0.17 openjdk-17-jdk-headless openjdk-17-jre-headless
for tool in ip java mvn gcc; do
  command -v "$tool" >/dev/null || { echo "demo: $tool is missing (see README: Requirements)" >&2; exit 1; }
done

work="$(mktemp -d /tmp/cadastre-demo.XXXXXX)"
ns="cadastre-demo-$$"
container="demo-$$"
agent_pid=""
added=""
netconf='{"cniVersion":"1.1.0","name":"cadastre","type":"cadastre","agentSocket":"'"$work"'/cni.sock","ipam":{}}'

cni() { # cni VERB: runs the installed plugin with the environment a runtime gives it
  echo "$netconf" | env -i CNI_COMMAND="$1" CNI_CONTAINERID="$container" CNI_NETNS="/var/run/netns/$ns" \
    CNI_IFNAME=eth0 CNI_PATH="$work/bin" "$work/bin/cadastre"
}

cleanup() {
  set +e
  if [[ -n "$added" ]]; then cni DEL >/dev/null; fi
  ip netns del "$ns" 2>/dev/null
  if [[ -n "$agent_pid" ]] && kill -0 "$agent_pid" 2>/dev/null; then
    kill -TERM "$agent_pid"; wait "$agent_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== building (mvn -DskipTests package)"
mvn -B -q -DskipTests package

echo "== starting cadastre-agent (embedded journal in $work/data)"
CADASTRE_DATA_DIR="$work/data" CADASTRE_CNI_SOCKET="$work/cni.sock" CADASTRE_CLUSTER_PORT=0 \
  CADASTRE_LOG_FORMAT=text bin/cadastre-agent >"$work/agent.log" 2>&1 &
agent_pid=$!
for _ in $(seq 1 240); do
  [[ -S "$work/cni.sock" ]] && break
  kill -0 "$agent_pid" 2>/dev/null || { echo "demo: the agent exited:"; cat "$work/agent.log"; exit 1; }
  sleep 0.25
done
[[ -S "$work/cni.sock" ]] || { echo "demo: the agent did not open its socket in 60 s:"; tail -20 "$work/agent.log"; exit 1; }

echo "== installing the plugin"
bin/cadastre-agent install --bin-dir "$work/bin" --conf-dir "$work/net.d" --socket "$work/cni.sock"

echo "== creating network namespace $ns"
ip netns add "$ns"

echo "== CNI ADD (container $container, ifname eth0)"
result="$(cni ADD)"
added=yes
echo "$result"

echo "== inside the namespace: interfaces, addresses, routes"
ip -n "$ns" addr show
ip -n "$ns" -4 route show
ip -n "$ns" -6 route show

echo "== CNI DEL"
cni DEL
added=""
echo "done: DEL succeeded; cleaning up"
