#!/bin/bash
# crisp's dev cluster on a newer Debian: trixie (Slurm 24.11, containerd 1.7) or sid
# (Slurm 26.05, containerd 2.1), inside a root filesystem of that release, beside
# bookworm's cluster (dev/up.sh), built there with that release's compiler and packages.
#   dev/matrix.sh SUITE root        make the root (debootstrap, crisp's packages); kept for reuse
#   dev/matrix.sh SUITE up          enter it and run dev/up.sh there (the same two nodes, crispd,
#                                   containerd, registries, test images)
#   dev/matrix.sh SUITE build       make the root and build crisp there (nice: beside other work)
#   dev/matrix.sh SUITE test [NAME...]
#                                   the unit tests, the plugin's options in srun --help, and the
#                                   integration tests (all, or NAME...); ends "N passed, N failed"
#   dev/matrix.sh SUITE run CMD...  CMD in the running cluster's namespaces, from this source tree;
#                                   http_proxy=http://127.0.0.1:3142 reaches the archive from there
#                                   (Pyxis's suite: dev/matrix.sh sid run env http_proxy=... bash
#                                   ../shared/acceptance/pyxis/run.sh)
#   dev/matrix.sh SUITE down        stop that cluster and leave its namespaces
# The root is entered with unshare and pivot_root, not chroot (a chroot refuses user
# namespaces, which remapped root and runc need). It has namespaces of its own: mounts,
# network (the same loopback addresses and ports as bookworm's cluster, apart), UTS (node 1 is
# named after the suite) and cgroup: each cgroup v1 hierarchy is mounted anew inside, rooted at
# a cgroup of its own (/sys/fs/cgroup/H/crisp-matrix-SUITE on the host), so its Slurm and
# containerd write only there (Slurm 26.05's cgroup/v1 writes the memory limit of the cgroup
# it starts in: never one of this machine's own).
source "$(dirname "$0")/lib.sh"
need_root

SUITE=${1:-}
COMMAND=${2:-}
if [[ $COMMAND == test-inside && ! -e /run/crisp-entered ]]; then die "test-inside runs in the root (dev/matrix.sh $SUITE test)"; fi
usage() { die "usage: dev/matrix.sh trixie|sid root|build|up|test [NAME...]|run CMD...|down"; }
case $SUITE in trixie | sid) ;; *) usage ;; esac
shift 2 || true
MATRIX_DIR=${CRISP_MATRIX_DIR:-/var/lib/crisp-matrix}
ROOT=$MATRIX_DIR/$SUITE
ANCHOR=/run/crisp-matrix/$SUITE.pid
CGROUP=crisp-matrix-$SUITE
# Inside, dev/ builds into its own directory and names its nodes after the suite.
INSIDE_ENV=(BUILD_DIR="$CRISP_SRC/build-$SUITE" SANITIZED_BUILD_DIR="$CRISP_SRC/build-$SUITE-sanitized"
  CRISP_NODE2="$SUITE-n2" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root)

# in_chroot CMD...: for apt only (package scripts need no user namespace).
in_chroot() {
  unshare -m --propagation private -- bash -c '
    root=$1; src=$2; shift 2
    mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev" &&
      mkdir -p "$root$src" && mount --bind "$src" "$root$src" && cp /etc/resolv.conf "$root/etc/resolv.conf" &&
      exec chroot "$root" "$@"' _ "$ROOT" "$CRISP_SRC" env "${INSIDE_ENV[@]}" "$@"
}

make_root() {
  if [[ -x $ROOT/usr/bin/apt-get ]]; then
    say "crisp's packages in $ROOT"
  else
    say "making a $SUITE root in $ROOT (debootstrap)"
    rm -rf "$ROOT.partial" && mkdir -p "$MATRIX_DIR"
    debootstrap --variant=minbase "$SUITE" "$ROOT.partial" "$(debian_mirror)" >"$MATRIX_DIR/$SUITE-debootstrap.log" 2>&1 ||
      { tail -20 "$MATRIX_DIR/$SUITE-debootstrap.log"; die "debootstrap of $SUITE failed"; }
    # The archive's Release files for these suites are past their valid-until date.
    echo 'Acquire::Check-Valid-Until "false";' >"$ROOT.partial/etc/apt/apt.conf.d/99crisp"
    # Packages must not start their daemons: the cluster starts its own.
    printf '#!/bin/sh\nexit 101\n' >"$ROOT.partial/usr/sbin/policy-rc.d" && chmod 755 "$ROOT.partial/usr/sbin/policy-rc.d"
    mv "$ROOT.partial" "$ROOT"
  fi
  in_chroot bash -c "source '$CRISP_SRC/dev/lib.sh'; install_packages" || die "installing crisp's packages in $ROOT failed"
  # And bats for Pyxis's suite (shared/acceptance): the root's network namespace reaches no archive.
  in_chroot bash -c "command -v bats >/dev/null || apt-get install -y -qq bats >/dev/null" || die "installing bats in $ROOT failed"
}

# The v1 hierarchies this machine mounts (cpu, memory, ..., systemd for name=systemd).
cgroup_v1_hierarchies() {
  awk '$3 == "cgroup" {n = split($2, p, "/"); print p[n]}' /proc/mounts
}

# "${IN_ROOT_CGROUP[@]}" CMD...: CMD as a process of the root's cgroup in every hierarchy (a
# command prefix, not a function, so that "... &" gives CMD's own pid).
# shellcheck disable=SC2016
IN_ROOT_CGROUP=(bash -c 'for h in $1; do echo $$ >"/sys/fs/cgroup/$h/$2/cgroup.procs" || exit 1; done; shift 2; exec "$@"' _
  "$(cgroup_v1_hierarchies | tr '\n' ' ')" "$CGROUP")

# The root's first process (pid 1 of its pid namespace), child of the unshare whose pid $ANCHOR holds.
anchor_pid() { [[ -f $ANCHOR ]] && pgrep -P "$(cat "$ANCHOR")" | head -1 | grep .; }

# A process that holds the root's namespaces; every later command enters them.
enter_root() {
  anchor_pid >/dev/null && return 0
  local h
  for h in $(cgroup_v1_hierarchies); do mkdir -p "/sys/fs/cgroup/$h/$CGROUP"; done
  # A cpuset takes no process before it has CPUs and memory nodes: the machine's.
  local f
  for f in cpuset.cpus cpuset.mems; do cat "/sys/fs/cgroup/cpuset/$f" >"/sys/fs/cgroup/cpuset/$CGROUP/$f"; done
  mkdir -p "$(dirname "$ANCHOR")"
  # shellcheck disable=SC2046
  "${IN_ROOT_CGROUP[@]}" setsid unshare --mount --net --uts --cgroup --pid --fork --propagation private -- \
    bash "$CRISP_SRC/dev/matrix_root.sh" "$ROOT" "$CRISP_SRC" "$SUITE" $(cgroup_v1_hierarchies) \
    >"$MATRIX_DIR/$SUITE-anchor.log" 2>&1 </dev/null &
  echo $! >"$ANCHOR"
  wait_for "the $SUITE root's namespaces" 30 bash -c "pid=\$(pgrep -P $(cat "$ANCHOR")) && nsenter -t \$pid -m -- test -e /run/crisp-entered"
}

# in_root CMD...: CMD in the root's namespaces and in its cgroup (entering a cgroup namespace
# moves no process: what CMD starts, Slurm's daemons among them, must start in the root's).
in_root() {
  local pid
  pid=$(anchor_pid) || die "the $SUITE cluster's namespaces are not there: dev/matrix.sh $SUITE up"
  "${IN_ROOT_CGROUP[@]}" nsenter -t "$pid" -m -n -u -C -p -- env -C "$CRISP_SRC" "${INSIDE_ENV[@]}" "$@"
}

# apt in the root's containers (Pyxis's suite installs packages there): the root's network
# reaches no archive, so a relay carries plain HTTP from its 127.0.0.1:$RELAY_PORT to the archive
# this machine's apt names; a command given http_proxy=http://127.0.0.1:$RELAY_PORT reaches it.
RELAY_PORT=3142
RELAY_SOCK=/run/crisp-matrix/$SUITE-archive.sock
start_archive_relay() {
  local url host pid
  url=$(debian_mirror)
  [[ $url == http://* ]] || { echo "dev: $url is not plain HTTP: no archive relay for the root" >&2; return 0; }
  host=$(sed -E 's#^http://([^/:]+).*#\1#' <<<"$url")
  pid=$(anchor_pid) || return 1
  stop_daemon "$RUN/$SUITE-relay-in.pid"; stop_daemon "$RUN/$SUITE-relay-out.pid"
  rm -f "$RELAY_SOCK"
  start_daemon "$SUITE-relay-out" "$RUN/$SUITE-relay-out.pid" socat UNIX-LISTEN:"$RELAY_SOCK",fork,mode=600 TCP:"$host":80
  # In the root's network namespace, with the host's files (the socket above).
  start_daemon "$SUITE-relay-in" "$RUN/$SUITE-relay-in.pid" nsenter -t "$pid" --net -- \
    socat TCP-LISTEN:$RELAY_PORT,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$RELAY_SOCK"
}

leave_root() {
  local pid h
  pid=$(anchor_pid) || return 0
  stop_daemon "$RUN/$SUITE-relay-in.pid"; stop_daemon "$RUN/$SUITE-relay-out.pid"
  in_root "$CRISP_SRC/dev/down.sh" || true
  # The end of its pid 1 ends every process of the root (shims, holders).
  kill -9 "$pid" 2>/dev/null || true
  wait_for "the $SUITE root's processes to end" 20 bash -c "! cat /sys/fs/cgroup/pids/$CGROUP/cgroup.procs | grep -q ."
  rm -f "$ANCHOR"
  for h in $(cgroup_v1_hierarchies); do
    find "/sys/fs/cgroup/$h/$CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

# Run inside the root: what a site on that release would check first, then the cluster's tests.
test_inside() {
  local pass=0 fail=0 t name line
  for t in "$BUILD_DIR"/tests/*_test; do
    name=$(basename "$t")
    if line=$("$t" --gtest_brief=1 2>&1 | tail -1) && [[ $line != *FAILED* ]]; then
      pass=$((pass + 1)); printf 'ok     %-32s (%s)\n' "$name" "$line"
    else
      fail=$((fail + 1)); printf 'FAILED %-32s (%s)\n' "$name" "$line"
    fi
  done
  if srun --help 2>&1 | grep -q -- '--container-image'; then
    pass=$((pass + 1)); echo "ok     plugin_options_in_srun_help"
  else
    fail=$((fail + 1)); echo "FAILED plugin_options_in_srun_help"
  fi
  # What a root cannot give, named: its network namespace reaches no DNS resolver; a release
  # whose Slurm package has no mpi/pmix plugin (sid's 26.05) cannot run PMIx steps.
  local not_here="registry_errors_each_get_their_line=the_root's_network_namespace_has_no_DNS_resolver"
  if ! srun --mpi=list 2>&1 | grep -qw pmix; then
    for t in mpi_pmix_openmpi pmix_directory_reaches_the_tasks forged_pmix_socket_is_not_followed; do
      not_here+=" $t=this_release's_Slurm_package_has_no_mpi/pmix_plugin"
    done
  fi
  CRISP_IT_NOT_HERE=$not_here "$CRISP_SRC/tests/integration/run.sh" "$@" | tee /run/crisp-integration.log
  local counts p f
  if counts=$(pass_fail_counts /run/crisp-integration.log integration); then
    read -r p f <<<"$counts"
    pass=$((pass + p)) fail=$((fail + f))
  else
    fail=$((fail + 1)); echo "FAILED integration: its tests did not finish"
  fi
  echo "$SUITE: $pass passed, $fail failed"
  ((fail == 0))
}

case $COMMAND in
  root) make_root ;;
  build)
    make_root
    in_chroot nice -n 19 bash -c "source '$CRISP_SRC/dev/lib.sh'; build_and_install >/dev/null"
    ;;
  test) in_root "$CRISP_SRC/dev/matrix.sh" "$SUITE" test-inside "$@" ;;
  test-inside) test_inside "$@" ;;
  up)
    make_root
    # The test images' Debian trees: bookworm's cluster made them (debootstrap needs the
    # archive, which the root's network namespace does not reach).
    for t in debian-bullseye-rootfs.tar debian-bookworm-mpi-rootfs.tar; do
      [[ -f $STATE/$t ]] || die "$STATE/$t is missing: run dev/up.sh first"
      [[ -f $ROOT$STATE/$t ]] || { mkdir -p "$ROOT$STATE" && cp "$STATE/$t" "$ROOT$STATE/$t"; }
    done
    enter_root
    start_archive_relay || die "the archive relay for the $SUITE root did not start"
    in_root "$CRISP_SRC/dev/up.sh" "$@"
    ;;
  run) in_root "$@" ;;
  down) leave_root ;;
  *) usage ;;
esac
