#!/bin/bash
# Builds bench/'s images into the dev registry, once (kept while the registry's are):
#   crisp-bench/small   the busybox test image + bench/compute + 3 MB of data   (~6 MB)
#   crisp-bench/large   small + five layers of 110 MB of incompressible data  (~560 MB)
# and the host copy of the compute binary, $BENCH_DIR/compute (the image's own file).
source "$(dirname "$0")/../dev/lib.sh"
source "$CRISP_SRC/dev/images/oci.sh"

BENCH_DIR=${BENCH_DIR:-$STATE/bench}
SMALL=crisp-bench/small:1 LARGE=crisp-bench/large:1
mkdir -p "$BENCH_DIR"
# The binary's content decides whether the images are current.
gcc -O2 -static -Wall -Wextra -Werror -o "$BENCH_DIR/compute.new" "$CRISP_SRC/bench/compute.c"
if cmp -s "$BENCH_DIR/compute.new" "$BENCH_DIR/compute" &&
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
prev=small
for i in 1 2 3 4 5; do
  rm -rf "$work/add" && mkdir -p "$work/add/data"
  head -c 110M /dev/urandom >"$work/add/data/large-$i.bin"
  oci_add_layer "$prev" "large$i" "$work/add"
  prev=large$i
done
oci_push "$prev" "$LARGE"
