# Sourced by the scripts that set up this host (test.sh, demo.sh, bench.sh): becoming root, and
# installing the Debian packages a script needs when they are missing. Not a script of its own.

# become_root NAME WHY [ARG...]: returns when this process is root. Otherwise runs the calling
# script again as root through sudo, with the same arguments (sudo's environment rules apply:
# MAVEN_OPTS and the like are dropped unless sudoers keeps them), or, without sudo, exits 1
# saying why root is needed. Call it before any cd: the script's path may be relative.
become_root() {
  local name=$1 why=$2
  shift 2
  ((EUID == 0)) && return 0
  local script
  script="$(cd "$(dirname "${BASH_SOURCE[-1]}")" && pwd)/$(basename "${BASH_SOURCE[-1]}")"
  if command -v sudo >/dev/null 2>&1; then
    echo "$name: needs root ($why): running it again through sudo" >&2
    exec sudo -- bash "$script" "$@"
  fi
  echo "$name: needs root ($why), and sudo is not installed: run it as root" >&2
  exit 1
}

# install_missing NAME PACKAGE...: installs, quietly and without questions, those of the Debian
# packages that are not installed (dpkg's status); installs nothing when all are. Needs root.
install_missing() {
  local name=$1 p
  shift
  if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: no dpkg/apt-get (not Debian?): make sure these are installed: $*" >&2
    return 0
  fi
  local missing=()
  for p in "$@"; do
    [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$name: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# upgrade_older NAME MIN_VERSION PACKAGE...: when the first package is installed at a Debian
# version older than MIN_VERSION (dpkg --compare-versions), upgrades all of them (installed ones
# only) to the candidate apt has. Needs root.
upgrade_older() {
  local name=$1 min=$2 installed
  shift 2
  command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 || return 0
  installed="$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null)" || return 0
  [[ -n "$installed" ]] && dpkg --compare-versions "$installed" lt "$min" || return 0
  echo "$name: upgrading $* ($1 $installed is older than $min)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --only-upgrade --no-install-recommends "$@" >/dev/null
}
