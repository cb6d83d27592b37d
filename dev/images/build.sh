#!/bin/bash
# Builds the test images locally and pushes them to the local registry:
#   crisp-test/busybox   busybox-static, a setuid probe, its own os-release
#   crisp-test/entrypoint, bad-entrypoint, noisy-entrypoint, daemon-entrypoint,
#   pytorch-env          busybox variants with an entrypoint, a failing one, one
#                        that floods its output, one that leaves a process
#                        running, and PYTORCH_VERSION set
#   crisp-test/debian    a debootstrap minbase of Debian 11 (not the host's release)
#   crisp-test/mpi       Debian 12 minbase with OpenMPI and MPICH, and the MPI test
#                        program built on the host against each
#   crisp-test/import-race  busybox with a large file, a world-writable /w and a squashfs file
#   crisp-test/ns-entrypoint  busybox whose entrypoint makes namespaces of its own (attack tests')
#   crisp-test/private   busybox on the registry that wants a login ($AUTH_REGISTRY)
#   crisp/pause          crisp-holder alone, the CRI sandbox ("pause") image
# and, beside them, squashfs files as enroot's import lays them out (root's, in $STATE/sqsh):
#   debian.sqsh          crisp-test/debian with Env PATH and CRISP_IMAGE=debian.sqsh, WorkingDir /workspace
source "$(dirname "$0")/../lib.sh"

source "$(dirname "$0")/oci.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OCI_DIR=$work/oci OCI_WORK=$work

# push_rootfs ROOTFS NAME:TAG CONFIG-ARGS...: packs a rootfs directory into the registry.
push_rootfs() {
  local rootfs=$1 ref=$2; shift 2
  local tag=${ref//[\/:]/_}
  oci_from_rootfs "$rootfs" "$tag" "$@"
  oci_push "$tag" "$ref"
}

say "building crisp-test/busybox"
r=$work/busybox
mkdir -p "$r"/{bin,etc,tmp,root,home,proc,sys,dev,usr/bin,suid}
cp /bin/busybox "$r/bin/busybox"
for a in $(/bin/busybox --list); do [[ $a == busybox ]] || ln -sf busybox "$r/bin/$a"; done
cat >"$r/etc/os-release" <<'OS'
NAME="crisp test image"
ID=crisp-busybox
PRETTY_NAME="crisp test image (busybox)"
OS
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
chmod 1777 "$r/tmp"
cc -static -O2 -o "$r/suid/probe" "$CRISP_SRC/dev/images/suid_probe.c"
chown root:root "$r/suid/probe"
chmod 4755 "$r/suid/probe"
# Variants share the busybox tree: push_rootfs moves it, so copy first.
cp -a "$r" "$work/entry"
cat >"$work/entry/entrypoint.sh" <<'EP'
#!/bin/sh
# Records each run, says something on both streams, leaves a variable, runs its arguments.
echo "run" >>/state/entrypoint-runs
echo "entrypoint ran as uid $(id -u)"
echo "entrypoint says hello on stderr" >&2
export CRISP_FROM_ENTRYPOINT=yes
export CRISP_ENTRYPOINT_SAW="${CRISP_PASSED-unset}"
exec "$@"
EP
chmod 755 "$work/entry/entrypoint.sh"
mkdir -m 1777 "$work/entry/state"
cp -a "$r" "$work/badentry"
printf '#!/bin/sh\necho "setup failed" >&2\nexit 3\n' >"$work/badentry/entrypoint.sh"
chmod 755 "$work/badentry/entrypoint.sh"
cp -a "$r" "$work/noisy"
cat >"$work/noisy/entrypoint.sh" <<'EP'
#!/bin/sh
# Floods its output (100 MB), leaves a process that writes for ever, runs its arguments.
yes "flood from the entrypoint, a line of about a hundred bytes to fill a log quickly ............" | head -c 100000000
echo "the flood is over"
(while :; do echo "spam from the background"; sleep 0.01; done) &
exec "$@"
EP
chmod 755 "$work/noisy/entrypoint.sh"
cp -a "$r" "$work/daemon"
printf '#!/bin/sh\n# Leaves a process running, as a service start script would, then runs its arguments.\n/bin/sh /crisp-bg.sh &\nexec "$@"\n' \
  >"$work/daemon/entrypoint.sh"
printf 'while :; do sleep 1; done\n' >"$work/daemon/crisp-bg.sh"
chmod 755 "$work/daemon/entrypoint.sh"
cp -a "$r" "$work/torch"
cp -a "$r" "$work/private"
cp -a "$r" "$work/race"
cp -a "$r" "$work/nsentry"
push_rootfs "$r" crisp-test/busybox:latest \
  --config.env=PATH=/usr/bin:/bin:/image/bin --config.env=CRISP_IMAGE_VAR=from-image \
  --config.env=LANG=C.UTF-8 --config.cmd=/bin/sh

say "building crisp-test/entrypoint, bad-entrypoint, noisy-entrypoint and pytorch-env"
push_rootfs "$work/entry" crisp-test/entrypoint:latest --config.env=PATH=/usr/bin:/bin \
  --config.entrypoint=/entrypoint.sh --config.cmd=/bin/sh
push_rootfs "$work/badentry" crisp-test/bad-entrypoint:latest --config.env=PATH=/usr/bin:/bin \
  --config.entrypoint=/entrypoint.sh
push_rootfs "$work/noisy" crisp-test/noisy-entrypoint:latest --config.env=PATH=/usr/bin:/bin \
  --config.entrypoint=/entrypoint.sh
push_rootfs "$work/daemon" crisp-test/daemon-entrypoint:latest --config.env=PATH=/usr/bin:/bin \
  --config.entrypoint=/entrypoint.sh
# Looks like a PyTorch image to the plugin (NGC images set PYTORCH_VERSION); MASTER_PORT is the
# image's; its WorkingDir is /workspace, as NGC's.
mkdir -m 755 "$work/torch/workspace"
push_rootfs "$work/torch" crisp-test/pytorch-env:latest --config.env=PATH=/usr/bin:/bin \
  --config.env=PYTORCH_VERSION=2.3.0 --config.env=MASTER_PORT=29500 --config.workingdir=/workspace

say "building crisp-test/import-race"
# An attack test's image (attack_tests.sh): a large file that keeps mksquashfs busy, read
# before /w, whose 32 small files any user may replace while it runs.
head -c 64M /dev/urandom >"$work/race/a-big"
mkdir -m 777 "$work/race/w"
for i in $(seq -w 0 31); do echo plain >"$work/race/w/z$i"; chmod 666 "$work/race/w/z$i"; done
# A squashfs shipped inside the image: its layer shows it as root's.
mkdir -p "$work/evil/etc" && echo evil >"$work/evil/etc/evil"
mksquashfs "$work/evil" "$work/race/evil.sqsh" -all-root -noappend -quiet >/dev/null
chmod 644 "$work/race/evil.sqsh"
push_rootfs "$work/race" crisp-test/import-race:latest --config.env=PATH=/usr/bin:/bin

say "building crisp-test/ns-entrypoint"
# An attack test's image: its entrypoint makes a user and mount namespace of its own, stacks
# an overlay naming host paths on /, and only then execs the holder.
cat >"$work/nsentry/entrypoint.sh" <<'EP'
#!/bin/sh
exec unshare -r -m sh -c 'mkdir -p /tmp/u /tmp/w; mount -t overlay overlay -o lowerdir=//etc,upperdir=/tmp/u,workdir=/tmp/w / 2>/dev/null; exec "$@"' sh "$@"
EP
chmod 755 "$work/nsentry/entrypoint.sh"
push_rootfs "$work/nsentry" crisp-test/ns-entrypoint:latest --config.env=PATH=/usr/bin:/bin \
  --config.entrypoint=/entrypoint.sh

say "building crisp-test/private (on the registry that wants a login)"
echo 'PRETTY_NAME="crisp private test image"' >"$work/private/etc/os-release"
push_rootfs "$work/private" private/crisp-test/private:latest --config.env=PATH=/usr/bin:/bin

say "building crisp/pause"
r=$work/pause
mkdir -p "$r"
cp "$PREFIX/libexec/crisp/crisp-holder" "$r/pause"
push_rootfs "$r" crisp/pause:latest --config.entrypoint=/pause

say "building crisp-test/debian (debootstrap minbase, cached in $STATE)"
cache=$STATE/debian-bullseye-rootfs.tar
if [[ ! -f $cache ]]; then
  mkdir -p "$STATE"
  debootstrap --variant=minbase bullseye "$work/deb" "$(debian_mirror)" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; die "debootstrap failed"; }
  rm -rf "$work/deb"/var/cache/apt/archives/*.deb "$work/deb"/var/lib/apt/lists/*
  tar -C "$work/deb" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
  rm -rf "$work/deb"
fi
mkdir -p "$work/deb" && tar -C "$work/deb" -xf "$cache"
push_rootfs "$work/deb" crisp-test/debian:bullseye \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.cmd=/bin/bash

# enroot_config ROOTFS WORKDIR NAME=VALUE...: the files enroot's import adds (its docker::configure).
enroot_config() {
  local rootfs=$1 workdir=$2; shift 2
  mkdir -p "$rootfs/etc" "$rootfs$workdir"
  printf '%s\n' "$@" >"$rootfs/etc/environment"
  : >"$rootfs/etc/fstab"
  cat >"$rootfs/etc/rc" <<EOF2
# org.opencontainers.image.title crisp-test
mkdir -p "$workdir" 2> /dev/null
cd "$workdir" && unset OLDPWD || exit 1

if [ -s /etc/rc.local ]; then
    . /etc/rc.local
fi

if [ \$# -gt 0 ]; then
    exec "\$@"
else
    exec '/bin/bash'
fi
EOF2
  printf '# This file is sourced by /etc/rc when the container starts.\n' >"$rootfs/etc/rc.local"
}
sq=$STATE/sqsh
mkdir -p "$sq" && chmod 0755 "$sq"
if [[ ! -f $sq/debian.sqsh || $cache -nt $sq/debian.sqsh ]]; then
  say "building $sq/debian.sqsh"
  rm -rf "$work/deb" && mkdir -p "$work/deb" && tar -C "$work/deb" -xf "$cache"
  enroot_config "$work/deb" /workspace PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CRISP_IMAGE=debian.sqsh
  mksquashfs "$work/deb" "$sq/debian.sqsh.tmp" -all-root -noappend -quiet -wildcards -e 'dev/*' >/dev/null
  chmod 0644 "$sq/debian.sqsh.tmp" && mv "$sq/debian.sqsh.tmp" "$sq/debian.sqsh"
fi

say "building crisp-test/mpi (debootstrap minbase with OpenMPI and MPICH, cached in $STATE)"
cache=$STATE/debian-bookworm-mpi-rootfs.tar
if [[ ! -f $cache ]]; then
  debootstrap --variant=minbase --include=libopenmpi3,libmpich12 bookworm "$work/mpi" "$(debian_mirror)" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; die "debootstrap failed"; }
  rm -rf "$work/mpi"/var/cache/apt/archives/*.deb "$work/mpi"/var/lib/apt/lists/*
  tar -C "$work/mpi" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
  rm -rf "$work/mpi"
fi
mkdir -p "$work/mpi" && tar -C "$work/mpi" -xf "$cache"
# The test programs, built against the image's own release (bookworm's MPI and glibc), so
# once, on bookworm, into the cached tree: a newer release's cluster (dev/matrix.sh) reuses it.
if [[ ! -x $work/mpi/usr/local/bin/allreduce-mpich ]]; then
  [[ $(. /etc/os-release && echo "$VERSION_CODENAME") == bookworm ]] || die "$cache lacks its MPI programs: run dev/up.sh on bookworm first"
  src=$CRISP_SRC/tests/integration/mpi_allreduce.c
  gcc -O2 -o "$work/mpi/usr/local/bin/allreduce-openmpi" "$src" -I/usr/lib/x86_64-linux-gnu/openmpi/include \
    -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi
  gcc -O2 -o "$work/mpi/usr/local/bin/allreduce-mpich" "$src" -I/usr/include/x86_64-linux-gnu/mpich -lmpich
  tar -C "$work/mpi" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
fi
push_rootfs "$work/mpi" crisp-test/mpi:bookworm \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.cmd=/bin/bash
