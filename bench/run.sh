#!/bin/bash
# The one command of bench/: on the dev cluster (brought up if it is not), measures crisp
# beside bare srun, Slurm's own --container (oci.conf + rootless runc) and srun + ctr, then
# prints a markdown table and writes bench/results/{summary.md,summary.csv,samples.csv,bench.png}.
#   bench/run.sh [--runs N]     (N launches per variant, default 20)
source "$(dirname "$0")/../dev/lib.sh"
need_root
PACKAGES=(python3-matplotlib)
install_packages
if ! sinfo -h >/dev/null 2>&1 || ! "$PREFIX/bin/crispctl" --socket "$CRISPD_SOCK" stats >/dev/null 2>&1; then
  "$CRISP_SRC/dev/up.sh" --no-demo
fi
BENCH_DIR=$STATE/bench
"$CRISP_SRC/bench/images.sh"

say "preparing Slurm's --container (oci.conf, rootless runc) and its bundle"
chmod 755 "$STATE" "$BENCH_DIR"
rm -rf "$BENCH_DIR/oci-small" "$BENCH_DIR/bundle"
skopeo copy --quiet --src-tls-verify=false "docker://$REGISTRY/crisp-bench/small:1" "oci:$BENCH_DIR/oci-small:1"
install -d -o "$TEST_USER" "$BENCH_DIR/bundle" "/run/user/crisp-bench-$TEST_USER"
chown -R "$TEST_USER" "$BENCH_DIR/oci-small"
runuser -u "$TEST_USER" -- umoci unpack --rootless --image "$BENCH_DIR/oci-small:1" "$BENCH_DIR/bundle/small" >/dev/null
# Slurm's containers guide's runc lines; slurmstepd reads the file at each step.
runtime="runc --rootless=true --root=/run/user/crisp-bench-%u/"
cat >/etc/slurm/oci.conf <<OCI
RunTimeQuery="$runtime state %n.%u.%j.%s.%t"
RunTimeKill="$runtime kill -a %n.%u.%j.%s.%t"
RunTimeDelete="$runtime delete --force %n.%u.%j.%s.%t"
RunTimeRun="$runtime run %n.%u.%j.%s.%t -b %b"
OCI
trap 'rm -f /etc/slurm/oci.conf; "$CRISP_SRC/bench/crispd_spares.sh" "${CRISP_SPARES:-8}" >/dev/null 2>&1' EXIT
# ctr runs its containers from its own namespace of the same containerd.
ctr --address "$CONTAINERD_SOCK" -n crisp-bench images pull --plain-http "$REGISTRY/crisp-bench/small:1" >/dev/null

mkdir -p "$CRISP_SRC/bench/results"
/usr/bin/python3 "$CRISP_SRC/bench/bench.py" --out "$CRISP_SRC/bench/results" --registry "$REGISTRY" \
  --user "$TEST_USER" --containerd "$CONTAINERD_SOCK" --crispd-pidfile "$RUN/crispd.pid" \
  --restart-crispd "bash $CRISP_SRC/bench/crispd_spares.sh" --crispd-log "$LOGS/crispd.log" --crispd-log "$LOGS/crispd-n2.log" \
  --crispd-metrics "$CRISPD_METRICS" --crispd-metrics "$NODE2_CRISPD_METRICS" \
  --bundle "$BENCH_DIR/bundle/small" --host-compute "$BENCH_DIR/compute" \
  --sqsh-small "$BENCH_DIR/small.sqsh" --sqsh-large "$BENCH_DIR/large.sqsh" \
  --crispctl "$PREFIX/bin/crispctl --socket $CRISPD_SOCK" "$@"
/usr/bin/python3 "$CRISP_SRC/bench/prolog_pull.py" --out "$CRISP_SRC/bench/results" --registry "$REGISTRY" \
  --user "$TEST_USER" --containerd "$CONTAINERD_SOCK" --node2-mnt "$NODE2_MNT" --crispctl "$PREFIX/bin/crispctl"
