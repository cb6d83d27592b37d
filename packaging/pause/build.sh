#!/bin/bash
# build.sh HOLDER OUT.tar: the CRI sandbox image, crisp-holder alone, as a
# docker-archive that `ctr images import` takes (docker.io/crisp/pause:latest).
set -euo pipefail
holder=$1 out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umoci init --layout "$work/oci"
umoci new --image "$work/oci:latest"
umoci unpack --rootless --image "$work/oci:latest" "$work/bundle" >/dev/null
install -m 755 "$holder" "$work/bundle/rootfs/pause"
umoci repack --image "$work/oci:latest" "$work/bundle"
umoci config --image "$work/oci:latest" --author=crisp --config.entrypoint=/pause
skopeo copy --quiet "oci:$work/oci:latest" "docker-archive:$out:crisp/pause:latest"
