# Shared by the dev/ scripts: where the local cluster lives and how its
# daemons are started and stopped. Sourced, not run.
set -euo pipefail

CRISP_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$CRISP_SRC/build}
PREFIX=${PREFIX:-/usr/local}
STATE=/var/lib/crisp-dev          # registry storage, image cache
RUN=/run/crisp-dev                # pid files
LOGS=/var/log/crisp-dev
REGISTRY=127.0.0.1:5000
# A registry that wants a login, for the credentials tests.
AUTH_REGISTRY=127.0.0.1:5002
AUTH_USER=crisp
AUTH_PASSWORD=crisp-secret
PRIVATE_IMAGE=$AUTH_REGISTRY/crisp-test/private:latest
# A pull-through cache (nginx) in front of $REGISTRY, and the registry name whose
# hosts.toml sends pulls through it, as a site's cache per rack.
CACHE_REGISTRY=127.0.0.1:5003
CACHE_NAME=cache.crisp.test
CONTAINERD_SOCK=/run/crisp/containerd.sock
CRISPD_SOCK=/run/crisp/crispd.sock
SLURM_PLUGINDIR=/usr/lib/x86_64-linux-gnu/slurm-wlm
TEST_USER=${TEST_USER:-crisptest}
TEST_GROUP=crisptest-extra   # a supplementary group the tests look for inside
TEST_IMAGE=$REGISTRY/crisp-test/busybox:latest
SANDBOX_IMAGE=$REGISTRY/crisp/pause:latest  # crisp-holder as the CRI sandbox image
DEBIAN_IMAGE=$REGISTRY/crisp-test/debian:bullseye

PACKAGES=(
  build-essential meson ninja-build pkg-config protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
  libgrpc++-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev googletest libgtest-dev libcurl4-openssl-dev libslurm-dev
  slurmctld slurmd slurm-client munge containerd runc docker-registry skopeo umoci busybox-static debootstrap
  git procps psmisc curl socat python3 iproute2 util-linux debhelper lintian rpm libpmix-dev libopenmpi-dev libmpich-dev
  clang libseccomp-dev dpkg-dev squashfs-tools nginx-light prometheus-cpp-dev prometheus apache2-utils
)

source "$CRISP_SRC/dev/node2.sh"
source "$CRISP_SRC/dev/fake_gpus.sh"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'dev: %s\n' "$*" >&2; exit 1; }

# The Debian archive this machine's apt uses (its sources, deb822 or one-line): debootstrap's mirror.
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -v -- '-security' | head -1)
  [[ -n $uri ]] || uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $2 !~ /^\[/ {print $2} $1 == "deb" && $2 ~ /^\[/ {print $3}' | grep -v -- '-security' | head -1)
  [[ -n $uri ]] || die "no Debian archive in this machine's apt sources"
  echo "$uri"
}

need_root() { [[ $(id -u) == 0 ]] || die "run as root (it installs packages and starts daemons)"; }

# clang's runtime (LeakSanitizer, libFuzzer) is named after the release's clang (14 in bookworm).
clang_runtime_package() {
  local v
  v=$(apt-cache depends clang 2>/dev/null | grep -oE 'clang-[0-9]+' | head -1)
  echo "libclang-rt-${v#clang-}-dev"
}

install_packages() {
  local missing=()
  # A fresh machine or root may have no package lists yet: the runtime's name is read from them.
  compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null || apt-get update -qq
  for p in "${PACKAGES[@]}" "$(clang_runtime_package)"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  ((${#missing[@]} == 0)) && return 0
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts its own nginx on every interface's port 80: the cluster runs its own, on loopback.
  if [[ " ${missing[*]} " == *" nginx-light "* ]]; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
    [[ -f /run/nginx.pid ]] && kill "$(cat /run/nginx.pid)" 2>/dev/null
  fi
  # Likewise Debian's Prometheus (on every interface's 9090): the tests start their own.
  if [[ " ${missing[*]} " == *" prometheus "* ]]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
    pkill -x prometheus 2>/dev/null || true
  fi
  return 0
}

build_and_install() {
  say "building crisp"
  if [[ ! -d $BUILD_DIR ]]; then
    meson setup "$BUILD_DIR" "$CRISP_SRC" --prefix="$PREFIX" -Dslurm_plugindir="$SLURM_PLUGINDIR" >/dev/null
  fi
  ninja -C "$BUILD_DIR" >/dev/null
  meson install -C "$BUILD_DIR" --quiet --no-rebuild
}

# The unit tests built with AddressSanitizer and UndefinedBehaviorSanitizer, in
# their own build directory (the integration tests use the normal build).
SANITIZED_BUILD_DIR=${SANITIZED_BUILD_DIR:-$CRISP_SRC/build-sanitized}
build_sanitized() {
  say "building the unit tests with ASan + UBSan ($SANITIZED_BUILD_DIR)"
  if [[ ! -d $SANITIZED_BUILD_DIR ]]; then
    meson setup "$SANITIZED_BUILD_DIR" "$CRISP_SRC" -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
      -Dcpp_args=-fno-sanitize-recover=all -Dc_args=-fno-sanitize-recover=all >/dev/null || return 1
  fi
  local targets=()
  for t in "$BUILD_DIR"/tests/*_test; do targets+=("tests/$(basename "$t")"); done
  ninja -C "$SANITIZED_BUILD_DIR" "${targets[@]}" >/dev/null
}

# start NAME PIDFILE CMD...: runs CMD in the background, logs in $LOGS/NAME.log.
start_daemon() {
  local name=$1 pidfile=$2; shift 2
  if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then return 0; fi
  mkdir -p "$LOGS" "$RUN"
  setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! >"$pidfile"
  LAST_STARTED=$name
}

stop_daemon() {
  local pidfile=$1 pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# crispd is stateless, so (re)starting it is always safe; the dev cluster sweeps
# more often than the default so tests see the safety net act quickly.
# A short stall limit, so the stalled-registry test is quick (production default: 60 s).
# CRISP_SPARES=0: the cluster without spare containers (every test passes either way).
CRISPD_ARGS=${CRISPD_ARGS:---sweep-interval 5 --pull-stall-timeout 20 --spares ${CRISP_SPARES:-8} ${CRISP_SPARES_PER_USER:+--spares-per-user $CRISP_SPARES_PER_USER} $FAKE_GPU_CRISPD_ARGS}
# containerd 2.x does not report its sandbox image (containerd.toml names it).
CRISPD_ARGS+=" --sandbox-image $SANDBOX_IMAGE"
# The site's container configuration (crisp's and enroot's forms): the dev cluster's own,
# which the integration tests write (crispd reads them for each container).
SITE_CONFIG_DIR=$STATE/site-config
ENROOT_CONFIG_DIR=$STATE/enroot-config
CRISPD_ARGS+=" --site-config $SITE_CONFIG_DIR --enroot-config $ENROOT_CONFIG_DIR"
# Each node's crispd serves its metrics on loopback; node 2 shares the host's network
# namespace (its pulls reach the registries), so it takes the next port.
CRISPD_METRICS=127.0.0.1:9474
NODE2_CRISPD_METRICS=127.0.0.1:9475
metrics_address_of() { [[ $1 == "$NODE2" ]] && echo "$NODE2_CRISPD_METRICS" || echo "$CRISPD_METRICS"; }
# start_crispd_on NODE PIDFILE LOGNAME [PREFIX-CMD...]: PREFIX-CMD enters the node's namespaces.
start_crispd_on() {
  local node=$1 pidfile=$2 name=$3; shift 3
  stop_crispd_on "$node" "$pidfile"
  # shellcheck disable=SC2086
  start_daemon "$name" "$pidfile" "$@" "$PREFIX/sbin/crispd" --socket "$CRISPD_SOCK" --node-name "$node" \
    --cri-endpoint "unix://$CONTAINERD_SOCK" --holder "$PREFIX/libexec/crisp/crisp-holder" \
    --metrics-address "$(metrics_address_of "$node")" $CRISPD_ARGS
  wait_for "crispd of $node" 15 "$@" "$PREFIX/bin/crispctl" --socket "$CRISPD_SOCK" stats
}
start_crispd() { start_crispd_on "$(hostname -s)" "$RUN/crispd.pid" crispd; }
# stop_crispd_on NODE PIDFILE: also any crispd of NODE its pid file lost track of
# (tests need "crispd is down" to be true).
stop_crispd_on() {
  stop_daemon "$2"
  # "[c]" keeps pgrep and pkill from matching the shells that run them.
  local pattern="[c]rispd --socket $CRISPD_SOCK --node-name $1 "
  pkill -f -- "$pattern" 2>/dev/null || true
  wait_for "crispd of $1 to stop" 10 bash -c "! pgrep -f -- '$pattern'"
}
stop_crispd() { stop_crispd_on "$(hostname -s)" "$RUN/crispd.pid"; }

# pass_fail_counts FILE LABEL: "P F" from FILE's last "LABEL: P passed, F failed" line; fails where there is none.
pass_fail_counts() {
  local line
  line=$(grep -E "^$2: [0-9]+ passed, [0-9]+ failed$" "$1" | tail -1)
  [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]] && echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  # What the daemon started last said, so a run elsewhere (CI) shows why.
  if [[ -n ${LAST_STARTED:-} && -f $LOGS/$LAST_STARTED.log ]]; then
    printf 'dev: the end of %s:\n' "$LOGS/$LAST_STARTED.log" >&2
    tail -8 "$LOGS/$LAST_STARTED.log" | cut -c1-300 >&2
  fi
  die "$what did not come up within ${secs}s (logs in $LOGS)"
}
