#!/bin/bash
# The include rule of each folder (written at the top of its meson.build), checked:
# prints every include that crosses a folder boundary it may not, and fails if any does.
cd "$(dirname "$0")/.." || exit 1
declare -A may=(
  [common]="common"
  [spank]="spank common"
  [tools]="tools common"
  [agent/devices]="agent/devices common"
  [agent/host]="agent/host common"
  [agent/cri]="agent/cri common"
  [agent/metrics]="agent/metrics common"
  [agent/images]="agent/images agent/cri agent/host agent/metrics common"
  [agent/spares]="agent/spares agent/cri common"
  [agent/slurm]="agent/slurm agent/devices common"
  [agent/site]="agent/site agent/host common"
  [agent/steps]="agent/steps agent/slurm agent/cri agent/images agent/devices agent/host agent/spares agent/metrics agent/site common"
  [agent]="agent agent/steps agent/slurm agent/cri agent/images agent/devices agent/host agent/spares agent/metrics agent/site common"
)
bad=0
for dir in "${!may[@]}"; do
  for f in "$dir"/*.cc "$dir"/*.h; do
    [[ -f $f ]] || continue
    while read -r inc; do
      target=$(dirname "$inc")
      ok=0
      for allowed in ${may[$dir]}; do [[ $target == "$allowed" ]] && ok=1; done
      ((ok)) || { echo "$f includes $inc, outside what $dir may include (${may[$dir]})"; bad=1; }
    done < <(sed -n 's/^#include "\([a-z_]*\/[a-z_/]*\.h\)"/\1/p' "$f")
  done
done
# The generated CRI headers: only cri/ includes them itself.
grep -l '"cri\.\(grpc\.\)\?pb\.h"' $(git ls-files 'agent/*.cc' 'agent/*.h' 'spank/*' 'common/*' 'tools/*') 2>/dev/null |
  grep -v '^agent/cri/' | sed 's/$/ includes the generated CRI headers itself (only agent\/cri\/ may)/' | grep . && bad=1
exit $bad
