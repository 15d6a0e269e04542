#!/usr/bin/env bash
# Multi-host test topology on one machine: every "host" is a network namespace with its own
# address on a shared L2 fabric (a Linux bridge in a namespace of its own), so that several
# cadastre-agents can run side by side, each wiring pods in its own host namespace, and a network
# partition is one command. Test tooling (needs root and iproute2); see chaos-tests/DESIGN.md.
#
#   topology.sh up NAME N [R]              fabric NAME-fabric (bridge br0), hosts NAME-h1..NAME-hN
#                                          at 198.19.255.<10+i>/24 and fd00:19:255::<10+i>/64,
#                                          service NAME-db at .9/24; with R, hosts NAME-h<N+1>..
#                                          NAME-h<N+R> on a second subnet (bridge br1,
#                                          198.19.254.<10+i>/24, fd00:19:254::<10+i>/64) behind
#                                          the router NAME-router (.1 on both); prints
#                                          "h<i> <netns> <address> <ipv6>" per host, then
#                                          "db <netns> <address>"; exit 3 if NAME exists; a
#                                          failed up removes what it made
#   topology.sh down NAME                  removes all of it (processes left in it are killed)
#   topology.sh partition NAME MEMBER...   cuts each member (h<i>, <i> or db) off the fabric
#   topology.sh heal NAME MEMBER...        puts each member back on the fabric
#   topology.sh exec NAME MEMBER -- CMD... runs CMD in the member's namespace
#
# Only 198.19.254.0/23 (RFC 2544 benchmarking range) and fd00:19:254::/63 (ULA) are used; nothing
# in the root namespace is touched: every link is created inside the fabric namespace with its
# peer placed straight into the host namespace, and every sysctl is written inside a test namespace.
# Hosts have no default route: each subnet has a route to the other through the router, nothing
# else.
set -euo pipefail

readonly NET=198.19.255
readonly NET6=fd00:19:255:
readonly ROUTED_NET=198.19.254
readonly ROUTED_NET6=fd00:19:254:
readonly PREFIX_LEN=24
readonly PREFIX6_LEN=64
readonly ROUTER_OCTET=1
readonly DB_OCTET=9
readonly FIRST_HOST_OCTET=10 # host i gets .(10+i)
readonly MAX_HOSTS=$((254 - FIRST_HOST_OCTET))
readonly BRIDGE=br0
readonly ROUTED_BRIDGE=br1
readonly HOST_IF=eth0
readonly EXIT_EXISTS=3 # up: NAME is taken (nothing was made, nothing was removed)

prog="$(basename "$0")"
die() { echo "$prog: $*" >&2; exit 1; }
usage() {
  cat >&2 <<EOF
usage: $prog up NAME N [R]
       $prog down NAME
       $prog partition NAME MEMBER...
       $prog heal NAME MEMBER...
       $prog exec NAME MEMBER -- CMD...
MEMBER is h<i> (or just <i>) for host i, or db.
EOF
  exit 2
}

check_name() {
  [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9_]{0,31}$ ]] \
    || die "bad NAME '$1': 1-32 letters, digits or '_', not starting with '_'"
}

# Namespaces that belong to NAME, exactly: NAME-fabric, NAME-db, NAME-h<digits>.
owned_namespaces() {
  local name="$1"
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${name}-(fabric|db|router|h[0-9]+)\$" || true
}

ns_exists() { [[ -e "/run/netns/$1" ]] || ip netns list 2>/dev/null | awk '{print $1}' | grep -qxF "$1"; }

# In-namespace sysctl write; a missing key (e.g. IPv6 off at boot) is skipped, a failed write is not.
ns_sysctl() {
  local ns="$1" key="$2" value="$3"
  ip netns exec "$ns" sh -c '
    f="/proc/sys/$(echo "$1" | tr . /)"
    [ -e "$f" ] || exit 0
    echo "$2" > "$f"' sh "$key" "$value" || die "cannot set $key=$value in $ns"
}

# Member argument -> "<fabric-side ifname> <netns>".
resolve_member() {
  local name="$1" member="$2"
  case "$member" in
    db|"$name-db") echo "db $name-db" ;;
    "$name"-h[0-9]*) resolve_member "$name" "${member#"$name"-}" ;;
    h[0-9]*|[0-9]*)
      local i="${member#h}"
      [[ "$i" =~ ^[1-9][0-9]*$ ]] || die "bad member '$member' (want h<i>, <i> or db)"
      echo "h$i $name-h$i" ;;
    *) die "bad member '$member' (want h<i>, <i> or db)" ;;
  esac
}

# One member on the fabric: veth created in the fabric namespace, its peer moved at creation
# into the member namespace as eth0 (no name ever exists in the root namespace). The port's alias
# names its bridge, for heal. IPv6 addresses without DAD: usable at once, and the fabric's
# addresses are unique by construction.
attach() {
  local name="$1" port="$2" ns="$3" address="$4" address6="${5:-}" bridge="${6:-$BRIDGE}"
  local fabric="$name-fabric"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$fabric" link add "$port" type veth peer name "$HOST_IF" netns "$ns"
  ip -n "$fabric" link set "$port" alias "$bridge"
  ip -n "$fabric" link set "$port" master "$bridge"
  ip -n "$fabric" link set "$port" up
  ip -n "$ns" addr add "$address/$PREFIX_LEN" dev "$HOST_IF"
  [[ -z "$address6" ]] || ip -n "$ns" addr add "$address6/$PREFIX6_LEN" dev "$HOST_IF" nodad
  ip -n "$ns" link set "$HOST_IF" up
}

# The router between the two subnets: eth0 on br0, eth1 on br1, .1 on both, forwarding on.
add_router() {
  local name="$1" fabric="$1-fabric" ns="$1-router"
  attach "$name" router "$ns" "$NET.$ROUTER_OCTET" "$NET6:$ROUTER_OCTET"
  ip -n "$fabric" link add router1 type veth peer name eth1 netns "$ns"
  ip -n "$fabric" link set router1 alias "$ROUTED_BRIDGE"
  ip -n "$fabric" link set router1 master "$ROUTED_BRIDGE"
  ip -n "$fabric" link set router1 up
  ip -n "$ns" addr add "$ROUTED_NET.$ROUTER_OCTET/$PREFIX_LEN" dev eth1
  ip -n "$ns" addr add "$ROUTED_NET6:$ROUTER_OCTET/$PREFIX6_LEN" dev eth1 nodad
  ip -n "$ns" link set eth1 up
  ns_sysctl "$ns" net.ipv4.ip_forward 1
  ns_sysctl "$ns" net.ipv6.conf.all.forwarding 1
}

# A member's way to the other subnet: through the router, nothing else (no default route).
route_to() {
  local ns="$1" net="$2" net6="$3" via="$4" via6="$5"
  ip -n "$ns" route add "$net.0/$PREFIX_LEN" via "$via"
  ip -n "$ns" -6 route add "$net6:/$PREFIX6_LEN" via "$via6"
}

cmd_up() {
  [[ $# -eq 2 || $# -eq 3 ]] || usage
  local name="$1" n="$2" r="${3:-0}"
  check_name "$name"
  [[ "$n" =~ ^[1-9][0-9]*$ ]] && ((n <= MAX_HOSTS)) || die "N must be 1..$MAX_HOSTS, not '$n'"
  [[ "$r" =~ ^[0-9]+$ ]] && ((n + r <= MAX_HOSTS)) || die "R must be 0..$((MAX_HOSTS - n)), not '$r'"
  [[ $EUID -eq 0 ]] || die "needs root (network namespaces)"
  local existing
  existing="$(owned_namespaces "$name")"
  if [[ -n "$existing" ]]; then
    echo "$prog: topology '$name' already exists ($(echo $existing)); run: $prog down $name" >&2
    exit "$EXIT_EXISTS"
  fi

  local fabric="$name-fabric"
  # `ip netns add` fails if the name exists: the fabric namespace is the lock for NAME. Only
  # once it is ours may a failure tear the topology down.
  if ! ip netns add "$fabric" 2>/dev/null; then
    echo "$prog: topology '$name' already exists (cannot create $fabric)" >&2
    exit "$EXIT_EXISTS"
  fi
  # Globals: the EXIT trap runs at top level, after the functions' locals are gone.
  UP_NAME="$name"
  UP_OK=0
  trap 'if ((UP_OK == 0)); then echo "$prog: up $UP_NAME failed; removing what it made" >&2; cmd_down "$UP_NAME" >/dev/null 2>&1 || true; fi' EXIT
  trap 'exit 130' INT TERM

  ip -n "$fabric" link set lo up
  # A quiet, plain switch: no IPv6 on the fabric's own ports (it has no addresses; bridged IPv6
  # frames still pass), no STP (ports forward at once), no multicast snooping (flood instead).
  ns_sysctl "$fabric" net.ipv6.conf.all.disable_ipv6 1
  ns_sysctl "$fabric" net.ipv6.conf.default.disable_ipv6 1
  local bridge
  for bridge in "$BRIDGE" $( ((r > 0)) && echo "$ROUTED_BRIDGE"); do
    ip -n "$fabric" link add "$bridge" type bridge stp_state 0 mcast_snooping 0
    ip -n "$fabric" link set "$bridge" up
  done

  local i ns
  for ((i = 1; i <= n; i++)); do
    ns="$name-h$i"
    attach "$name" "h$i" "$ns" "$NET.$((FIRST_HOST_OCTET + i))" "$NET6:$((FIRST_HOST_OCTET + i))"
    # What a CNI host needs globally; per-veth proxy_arp/forwarding is the agent's job.
    ns_sysctl "$ns" net.ipv4.ip_forward 1
    ns_sysctl "$ns" net.ipv6.conf.all.forwarding 1
  done
  attach "$name" db "$name-db" "$NET.$DB_OCTET"
  if ((r > 0)); then
    add_router "$name"
    for ((i = n + 1; i <= n + r; i++)); do
      ns="$name-h$i"
      attach "$name" "h$i" "$ns" "$ROUTED_NET.$((FIRST_HOST_OCTET + i))" "$ROUTED_NET6:$((FIRST_HOST_OCTET + i))" \
        "$ROUTED_BRIDGE"
      ns_sysctl "$ns" net.ipv4.ip_forward 1
      ns_sysctl "$ns" net.ipv6.conf.all.forwarding 1
      route_to "$ns" "$NET" "$NET6" "$ROUTED_NET.$ROUTER_OCTET" "$ROUTED_NET6:$ROUTER_OCTET"
    done
    for ((i = 1; i <= n; i++)); do
      route_to "$name-h$i" "$ROUTED_NET" "$ROUTED_NET6" "$NET.$ROUTER_OCTET" "$NET6:$ROUTER_OCTET"
    done
    ip -n "$name-db" route add "$ROUTED_NET.0/$PREFIX_LEN" via "$NET.$ROUTER_OCTET"
  fi
  UP_OK=1
  trap - EXIT INT TERM

  for ((i = 1; i <= n; i++)); do
    echo "h$i $name-h$i $NET.$((FIRST_HOST_OCTET + i)) $NET6:$((FIRST_HOST_OCTET + i))"
  done
  for ((i = n + 1; i <= n + r; i++)); do
    echo "h$i $name-h$i $ROUTED_NET.$((FIRST_HOST_OCTET + i)) $ROUTED_NET6:$((FIRST_HOST_OCTET + i))"
  done
  echo "db $name-db $NET.$DB_OCTET"
}

cmd_down() {
  [[ $# -eq 1 ]] || usage
  local name="$1"
  check_name "$name"
  local namespaces ns pids pid deadline
  namespaces="$(owned_namespaces "$name")"
  [[ -n "$namespaces" ]] || return 0
  # A process left in a namespace keeps it (and its addresses) alive after `ip netns del`:
  # stop them first, TERM then KILL.
  pids=""
  for ns in $namespaces; do pids+=" $(ip netns pids "$ns" 2>/dev/null || true)"; done
  pids="$(echo $pids)"
  if [[ -n "$pids" ]]; then
    kill -TERM $pids 2>/dev/null || true
    deadline=$((SECONDS + 5))
    while ((SECONDS < deadline)); do
      local alive=""
      for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive+=" $pid"; done
      [[ -n "$alive" ]] || break
      sleep 0.1
    done
    kill -KILL $pids 2>/dev/null || true
  fi
  # Hosts first, fabric last (deleting a namespace deletes its veth ends, and their peers).
  local status=0
  for ns in $(echo "$namespaces" | grep -v -- '-fabric$'; echo "$namespaces" | grep -- '-fabric$'); do
    ip netns del "$ns" 2>/dev/null || ! ns_exists "$ns" || { echo "$prog: cannot delete $ns" >&2; status=1; }
  done
  return $status
}

# partition/heal: detach the member's fabric-side veth from the bridge / attach it again.
cmd_cut() {
  local verb="$1"; shift
  [[ $# -ge 2 ]] || usage
  local name="$1"; shift
  check_name "$name"
  local fabric="$name-fabric" member port ns
  ns_exists "$fabric" || die "no topology '$name' (no namespace $fabric)"
  for member in "$@"; do
    local resolved
    resolved="$(resolve_member "$name" "$member")"
    read -r port ns <<<"$resolved"
    ip -n "$fabric" link show dev "$port" >/dev/null 2>&1 || die "no member '$member' in topology '$name'"
    if [[ "$verb" == partition ]]; then
      ip -n "$fabric" link set dev "$port" nomaster
    else
      # The port's alias names its bridge (br1 behind the router); ports from before had none.
      local bridge
      bridge="$(ip -n "$fabric" -o link show dev "$port" | sed -n 's/.*alias \(br[0-9]*\).*/\1/p')"
      ip -n "$fabric" link set dev "$port" master "${bridge:-$BRIDGE}"
      ip -n "$fabric" link set dev "$port" up
    fi
  done
}

cmd_exec() {
  [[ $# -ge 4 && "$3" == "--" ]] || usage
  local name="$1" member="$2"; shift 3
  check_name "$name"
  local port ns resolved
  resolved="$(resolve_member "$name" "$member")"
  read -r port ns <<<"$resolved"
  ns_exists "$ns" || die "no member '$member' in topology '$name' (no namespace $ns)"
  # exec: the caller's process becomes `ip netns exec`, which execs CMD, so its pid is CMD's.
  exec ip netns exec "$ns" "$@"
}

[[ $# -ge 1 ]] || usage
verb="$1"; shift
case "$verb" in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  partition|heal) cmd_cut "$verb" "$@" ;;
  exec) cmd_exec "$@" ;;
  -h|--help|help) usage ;;
  *) echo "$prog: unknown command '$verb'" >&2; usage ;;
esac
