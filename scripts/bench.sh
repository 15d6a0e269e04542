#!/usr/bin/env bash
# The benchmark suite (issue 5), one command on a fresh Debian 12 machine, as root (or through
# sudo, which it runs itself again with when not root): installs what is missing (the reference
# CNI plugins among it), builds, runs every scenario and writes the report to
# benchmarks/target/report (report.md, report.json, PNG plots). Everything it starts (agents,
# Cassandra, network namespaces) is stopped and removed when it ends, also on failure.
#   scripts/bench.sh                 # the full suite (~23 min on 2 cores)
#   scripts/bench.sh --quick         # a few repetitions: checks that it runs
#   scripts/bench.sh --only burst    # some scenarios; --help lists them
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/host.sh"
become_root bench "it creates network namespaces" "$@"
cd "$root"
# iperf3 and busybox (ping): the pod network's throughput, latency and convergence (pod-network).
install_missing bench openjdk-17-jdk-headless maven gcc libc6-dev musl-dev iproute2 containernetworking-plugins containerd runc \
  busybox-static fontconfig fonts-dejavu-core iperf3
# openjdk-17 from 17.0.17 on: older ones lack the fix of JDK-8351933, with which a ForkJoinPool (every
# Pekko dispatcher) may stop for good; the agent warns on them (JavaRuntimeCheck).
upgrade_older bench 17.0.17 openjdk-17-jdk-headless openjdk-17-jre-headless
echo "== building (mvn -DskipTests package)"
mvn -B -q -DskipTests package
jar=$(ls benchmarks/target/cadastre-benchmarks-*.jar | head -1)
exec java -Xmx1g \
  -Dcadastre.plugin="$root/cni-bridge/target/static/cadastre" \
  -Dcadastre.agent.native-dir="$root/cluster/target/native" \
  -Dcadastre.topology.script="$root/scripts/topology.sh" \
  -Dcadastre.commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  -Dcadastre.reference.version="containernetworking-plugins $(dpkg-query -W -f '${Version}' containernetworking-plugins)" \
  -cp "$jar:benchmarks/target/lib/*" io.cadastre.bench.BenchmarkSuite --out benchmarks/target/report "$@"
