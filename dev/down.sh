#!/bin/bash
# Stops the local cluster started by dev/up.sh and removes what its jobs left
# in crisp's containerd. Images and the registry's storage are kept (--purge removes them).
source "$(dirname "$0")/lib.sh"
need_root
purge=0
[[ ${1:-} == --purge ]] && purge=1

say "stopping slurmd and slurmctld"
scancel --state=RUNNING --full 2>/dev/null || true
[[ -f /var/spool/slurmd/slurmd.pid ]] && kill "$(cat /var/spool/slurmd/slurmd.pid)" 2>/dev/null || true
node2_stop
stop_daemon "$RUN/slurmctld.pid"
# Only this pid namespace's: a newer release's cluster (dev/matrix.sh) has its own.
pkill --ns $$ --nslist pid -x slurmstepd 2>/dev/null || true
say "stopping crispd"
stop_crispd
if [[ -S $CONTAINERD_SOCK ]]; then
  say "removing crisp's sandboxes and containers"
  for ns in k8s.io; do
    for c in $(ctr --address "$CONTAINERD_SOCK" -n $ns tasks ls -q 2>/dev/null); do
      ctr --address "$CONTAINERD_SOCK" -n $ns tasks kill -s SIGKILL "$c" 2>/dev/null || true
    done
  done
fi
# crisp's cgroup for imports and saves (crispd --squashfs-cgroup), empty once crispd is gone.
rmdir /sys/fs/cgroup/{cpu,memory}/crisp/squashfs /sys/fs/cgroup/{cpu,memory}/crisp 2>/dev/null || true
say "stopping containerd and the registry"
stop_daemon "$RUN/containerd.pid"
stop_daemon "$RUN/registry.pid"
stop_daemon "$RUN/registry-auth.pid"
stop_daemon "$RUN/registry-cache-daemon.pid"
# containerd-shim processes outlive containerd by design.
pkill --ns $$ --nslist pid -f "containerd-shim-runc-v2 -namespace k8s.io -address $CONTAINERD_SOCK" 2>/dev/null || true
if ((purge)); then
  say "purging state"
  grep -o "[^ ]*/crisp/containerd[^ ]*" /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null || true
  rm -rf /var/lib/crisp/containerd /run/crisp/containerd "$STATE/registry" "$STATE/registry-auth" "$STATE/registry-cache"
  node2_remove
  rm -rf /var/lib/crisp-n2 /run/crisp-n2 /var/spool/slurmd-n2 /tmp-n2
fi
