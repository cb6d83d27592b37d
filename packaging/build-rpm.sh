#!/bin/bash
# Builds the RPM with rpmbuild (Debian's rpm package works here; its empty RPM
# database knows none of the build dependencies, which come from apt: --nodeps).
# The Slurm version named is the installed one. Output: packaging/out/*.rpm
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
version=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$src/meson.build")
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev)
# The containerd this release ships: 2.x reads configuration version 3.
containerd_conf=containerd-crisp.toml
[[ $(containerd --version 2>/dev/null | awk '{print $3}') =~ ^v?[2-9]\. ]] && containerd_conf=containerd-crisp-v3.toml
mkdir -p "$top/SOURCES"
git -C "$src" archive --prefix="crisp-$version/" -o "$top/SOURCES/crisp-$version.tar.gz" HEAD
rpmbuild -bb --nodeps --define "_topdir $top" --define "slurm_version ${slurm%%-*}" --define "containerd_conf $containerd_conf" \
  --define "slurm_plugindir /usr/lib/x86_64-linux-gnu/slurm-wlm" --define "_unitdir /lib/systemd/system" \
  "$src/packaging/rpm/crisp.spec" >"$top/build.log" 2>&1 || { tail -40 "$top/build.log"; exit 1; }
mkdir -p "$src/packaging/out"
rm -f "$src"/packaging/out/*.rpm  # one rpm out, for the Slurm built against now
find "$top/RPMS" -name '*.rpm' -exec mv {} "$src/packaging/out/" \;
ls "$src"/packaging/out/*.rpm
