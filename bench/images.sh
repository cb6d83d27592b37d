#!/bin/bash
# Builds bench/'s images into the dev registry, once (kept while the registry's are):
#   crisp-bench/small   the busybox test image + bench/compute + 3 MB of data   (~6 MB)
#   crisp-bench/large   small + five layers of 110 MB of incompressible data  (~560 MB)
# the host copy of the compute binary, $BENCH_DIR/compute (the image's own file), and as
# squashfs files (root's, as an admin stages them): $BENCH_DIR/small.sqsh (the small image)
# and $BENCH_DIR/large.sqsh (the small image + 2 GB of incompressible data).
source "$(dirname "$0")/../dev/lib.sh"
source "$CRISP_SRC/dev/images/oci.sh"

BENCH_DIR=${BENCH_DIR:-$STATE/bench}
SMALL=crisp-bench/small:1 LARGE=crisp-bench/large:1
mkdir -p "$BENCH_DIR"
# The binary's content decides whether the images are current.
gcc -O2 -static -Wall -Wextra -Werror -o "$BENCH_DIR/compute.new" "$CRISP_SRC/bench/compute.c"
if cmp -s "$BENCH_DIR/compute.new" "$BENCH_DIR/compute" && [[ -f $BENCH_DIR/large.sqsh ]] &&
  skopeo inspect --tls-verify=false "docker://$REGISTRY/$LARGE" >/dev/null 2>&1; then
  rm "$BENCH_DIR/compute.new"
  exit 0
fi
mv "$BENCH_DIR/compute.new" "$BENCH_DIR/compute"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OCI_DIR=$work/oci OCI_WORK=$work
say "building $SMALL and $LARGE"
umoci init --layout "$OCI_DIR"
skopeo copy --quiet --src-tls-verify=false "docker://$REGISTRY/crisp-test/busybox:latest" "oci:$OCI_DIR:base"
mkdir -p "$work/add/usr/local/bin" "$work/add/data"
cp "$BENCH_DIR/compute" "$work/add/usr/local/bin/crisp-compute"
head -c 3M /dev/urandom >"$work/add/data/small.bin"
oci_add_layer base small "$work/add"
umoci config --image "$OCI_DIR:small" --config.env=PATH=/usr/local/bin:/usr/bin:/bin
oci_push small "$SMALL"
say "building $BENCH_DIR/small.sqsh and large.sqsh"
umoci unpack --image "$OCI_DIR:small" "$work/bundle" >/dev/null
mksquashfs "$work/bundle/rootfs" "$BENCH_DIR/small.sqsh" -all-root -noappend -quiet >/dev/null
mkdir -p "$work/bundle/rootfs/data/large"
for i in 1 2 3 4; do head -c 512M /dev/urandom >"$work/bundle/rootfs/data/large/$i.bin"; done
# Incompressible: stored as it is, not compressed (mksquashfs would try, and keep it as it is).
mksquashfs "$work/bundle/rootfs" "$BENCH_DIR/large.sqsh" -all-root -noappend -quiet -noD -noF >/dev/null
rm -rf "$work/bundle"
chmod 0644 "$BENCH_DIR/small.sqsh" "$BENCH_DIR/large.sqsh"
prev=small
for i in 1 2 3 4 5; do
  rm -rf "$work/add" && mkdir -p "$work/add/data"
  head -c 110M /dev/urandom >"$work/add/data/large-$i.bin"
  oci_add_layer "$prev" "large$i" "$work/add"
  prev=large$i
done
oci_push "$prev" "$LARGE"
