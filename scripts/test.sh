#!/usr/bin/env bash
# Every test, one command on a fresh Debian 12 machine: installs what the tests use when it is
# missing, then runs `mvn -B verify`, with any arguments given passed on to Maven. Needs root
# (the tests create network namespaces and veth pairs and run containerd and podman; apt-get):
# as root it runs at once, otherwise it runs itself again through sudo.
#   scripts/test.sh                     # all tests (21.5-22 minutes on 2 cores from a fresh clone, 2026-11-28)
#   scripts/test.sh -pl cni-bridge -Dtest=CniArgsTest -Dsurefire.failIfNoSpecifiedTests=false
#   scripts/test.sh --help
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/host.sh"
if [[ ${1:-} == --help || ${1:-} == -h ]]; then
  sed -n '2,8s/^# \{0,1\}//p' "$root/scripts/test.sh"
  exit 0
fi
become_root test "network namespaces, veth pairs, containerd, apt-get" "$@"
cd "$root"

# fontconfig and a font: the benchmark report's PNG plots are drawn by JFreeChart (ReportWriterTest).
# containerd (with runc and busybox-static): the CRI end-to-end tests run a private one (test-cri);
# busybox also pings and fetches inside test namespaces.
# containernetworking-plugins (/usr/lib/cni): the runtimes' loopback, bridge delegating to cadastre-ipam
# (RuntimesTest), the plugins the benchmark scenarios' tests measure against.
# podman: RuntimesTest runs a container through it (libcni).
# strace: EmbeddedJournalEndToEndTest counts the agent's fdatasync calls per acknowledged ADD.
# libfuse2: PowerLossFs (FUSE through jnr-fuse), the journal's power-loss tests.
# nftables: NetlinkHostRoutingTest reads the outgoing NAT table with nft, as an operator would.
# iptables: the reference portmap plugin (pods' hostPorts, chained after Cadastre) writes with it.
install_missing test openjdk-17-jdk-headless maven gcc libc6-dev musl-dev iproute2 containernetworking-plugins podman \
  containerd runc busybox-static fontconfig fonts-dejavu-core strace libfuse2 nftables iptables
# openjdk-17 from 17.0.17 on: older ones lack the fix of JDK-8351933, with which a ForkJoinPool (every
# Pekko dispatcher) may stop for good; the agent warns on them (JavaRuntimeCheck) and ImageTest refuses
# to ship one in the image.
upgrade_older test 17.0.17 openjdk-17-jdk-headless openjdk-17-jre-headless

echo "test: mvn -B verify $*"
exec mvn -B verify "$@"
