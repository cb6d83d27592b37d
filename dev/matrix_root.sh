#!/bin/bash
# Run by dev/matrix.sh, already in mount, network, UTS, cgroup and pid namespaces of its own:
# makes ROOT this namespace's root (pivot_root, so user namespaces work in it), with its own
# /proc, /sys, cgroup hierarchies (rooted at the cgroup dev/matrix.sh made), /run and the
# source tree at its own path, then holds the namespaces until dev/matrix.sh SUITE down.
#   matrix_root.sh ROOT SRC SUITE HIERARCHY...
set -euo pipefail
root=$1 src=$2 suite=$3
shift 3

mount --bind "$root" "$root"  # pivot_root wants a mount point; runc a root it can make a slave
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t sysfs sysfs "$root/sys"  # this network namespace's
mount -t tmpfs -o mode=755 cgroup "$root/sys/fs/cgroup"
for h in "$@"; do
  mkdir -p "$root/sys/fs/cgroup/$h"
  opts=$h
  [[ $h == systemd ]] && opts=none,name=systemd
  mount -t cgroup -o "$opts" cgroup "$root/sys/fs/cgroup/$h"
done
mkdir -p "$root/sys/fs/cgroup/unified" && mount -t cgroup2 cgroup2 "$root/sys/fs/cgroup/unified"
mount -t tmpfs -o mode=755 run "$root/run"
mkdir -p "$root/run/lock" "$root$src"
mount --bind "$src" "$root$src"
# The Pyxis acceptance suite reads shared/ beside the source tree.
if [[ -d $src/../shared ]]; then
  mkdir -p "$root$src/../shared" && mount --bind -o ro "$src/../shared" "$root$src/../shared"
fi

hostname "$suite"
grep -qw "$suite" "$root/etc/hosts" 2>/dev/null || echo "127.0.1.1 $suite" >>"$root/etc/hosts"
cd "$root"
mkdir -p .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
ip link set lo up
touch /run/crisp-entered
# pid 1 of the root's pid namespace: reaps the daemons' orphans, as an init does.
while :; do
  sleep 3600 &
  wait $!
done
