#!/bin/bash
# Builds crisp's .deb for this machine's Slurm: dpkg-buildpackage on a copy of
# the tree with packaging/debian as debian/. The version says which Slurm it
# was built against (Slurm refuses plugins built for another release):
# 0.1.0-1+slurm22.05.8. Output: packaging/out/*.deb
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/packaging/out
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$src/meson.build")
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev)
slurm_upstream=${slurm%%-*}

tree=$work/crisp-$version
mkdir -p "$tree"
git -C "$src" ls-files -z | (cd "$src" && xargs -0 cp --parents -t "$tree")
cp -r "$src/packaging/debian" "$tree/debian"
cp "$src/packaging/systemd/crispd.service" "$tree/debian/crisp.crispd.service"
cp "$src/packaging/systemd/crisp-containerd.service" "$tree/debian/crisp.crisp-containerd.service"
cp "$src/conf-examples/crispd.default" "$tree/debian/crisp.crispd.default"
cat >"$tree/debian/changelog" <<CL
crisp ($version-1+slurm$slurm_upstream) unstable; urgency=medium

  * Built against Slurm $slurm.

 -- crisp developers <maintainers@crisp-containers.org>  $(date -R)
CL
(cd "$tree" && dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1) || { tail -40 "$work/build.log"; exit 1; }
mkdir -p "$out"
rm -f "$out"/*.deb
mv "$work"/*.deb "$out/"
ls "$out"/*.deb
