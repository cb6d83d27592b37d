# OCI layout helpers shared by dev/images/build.sh and bench/images.sh; source
# after dev/lib.sh. OCI_DIR is the layout, OCI_WORK a scratch directory.

# oci_from_rootfs ROOTFS TAG CONFIG-ARGS...: a one-layer image of ROOTFS (moved away).
oci_from_rootfs() {
  local rootfs=$1 tag=$2; shift 2
  [[ -d $OCI_DIR ]] || umoci init --layout "$OCI_DIR"
  umoci new --image "$OCI_DIR:$tag"
  umoci unpack --image "$OCI_DIR:$tag" "$OCI_WORK/bundle-$tag" >/dev/null
  rm -rf "$OCI_WORK/bundle-$tag/rootfs"
  mv "$rootfs" "$OCI_WORK/bundle-$tag/rootfs"
  umoci repack --image "$OCI_DIR:$tag" "$OCI_WORK/bundle-$tag"
  rm -rf "$OCI_WORK/bundle-$tag"
  umoci config --image "$OCI_DIR:$tag" --author=crisp-dev "$@"
}

# oci_add_layer FROM-TAG TAG DIR: TAG is FROM-TAG plus a layer holding DIR's files at /.
oci_add_layer() {
  local from=$1 tag=$2 dir=$3
  umoci tag --image "$OCI_DIR:$from" "$tag"
  umoci unpack --image "$OCI_DIR:$tag" "$OCI_WORK/bundle-$tag" >/dev/null
  cp -a "$dir/." "$OCI_WORK/bundle-$tag/rootfs/"
  umoci repack --image "$OCI_DIR:$tag" "$OCI_WORK/bundle-$tag"
  rm -rf "$OCI_WORK/bundle-$tag"
}

# oci_push TAG NAME:TAG: to the dev registry (private/... to the one that wants a login).
oci_push() {
  local tag=$1 ref=$2 to=$REGISTRY/$2 creds=()
  if [[ $ref == private/* ]]; then
    to=$AUTH_REGISTRY/${ref#private/}
    creds=(--dest-creds "$AUTH_USER:$AUTH_PASSWORD")
  fi
  skopeo copy --quiet --dest-tls-verify=false "${creds[@]}" "oci:$OCI_DIR:$tag" "docker://$to"
  # A node keeps the image it has under a tag (as kubelet's IfNotPresent): drop it, so the next step pulls this build.
  local on
  for on in "" in_node2; do
    [[ -z $on ]] || in_node2 true 2>/dev/null || continue
    $on ctr --address "$CONTAINERD_SOCK" -n k8s.io images rm "$to" >/dev/null 2>&1 || true
  done
}
