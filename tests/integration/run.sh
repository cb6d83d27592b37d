#!/bin/bash
# End-to-end tests on the real local cluster (dev/up.sh --no-demo first):
# srun -> spank_crisp.so -> crispd -> containerd's CRI -> tasks in the image.
# Each test asserts what a user would check. Ends with "N passed, N failed".
#   run.sh           every test
#   run.sh NAME...   only test_NAME...
source "$(dirname "$0")/../../dev/lib.sh"
set +e -o pipefail
source "$CRISP_SRC/tests/integration/lib.sh"
# The areas, in the order they run; each file's test_NAME functions run in the order written there.
AREAS=(basics images pulls lifecycle security attack root_reads pyxis everyday namespace squashfs multinode gpu spares
  site metrics)
for area in "${AREAS[@]}"; do
  source "$CRISP_SRC/tests/integration/${area}_tests.sh"
done
tests_of() { grep -oP '^test_\K[a-z0-9_]+(?=\(\))' "$CRISP_SRC/tests/integration/$1_tests.sh"; }

setup
by_file=()
for area in "${AREAS[@]}"; do
  # An area that needs what this cluster lacks says why (AREA_not_here), and its tests are named, not run.
  why=$(declare -F "${area}_not_here" >/dev/null && "${area}_not_here")
  p0=$passed f0=$failed n0=$not_run
  for name in $(tests_of "$area"); do
    if [[ -n $why ]]; then CRISP_IT_NOT_HERE="$name=${why// /_}" t "$name"; else t "$name"; fi
  done
  ((passed + failed + not_run > p0 + f0 + n0)) &&
    by_file+=("$(printf '%-26s %3d passed, %d failed, %d not run' "${area}_tests.sh" $((passed - p0)) $((failed - f0)) $((not_run - n0)))")
done
# Per file, for the table of versions (README, Supported versions).
printf 'file %s\n' "${by_file[@]}"
((not_run)) && echo "integration: $not_run not run here (named above with why)"
echo "integration: $passed passed, $failed failed"
((failed == 0))
