#!/bin/bash
# Runs every test: the unit tests (GoogleTest), then the integration tests on
# the real local cluster, which it brings up itself (dev/up.sh --no-demo).
# Ends with "N passed, N failed" over both, and fails if any test failed.
source "$(dirname "$0")/lib.sh"
need_root
set +e

install_packages || die "package installation failed"
build_and_install || die "build failed"

say "unit tests"
results=$BUILD_DIR/test-results
rm -rf "$results" && mkdir -p "$results"
unit_failed_bins=0
for t in "$BUILD_DIR"/tests/*_test; do
  name=$(basename "$t")
  if ! "$t" --gtest_brief=1 --gtest_output="json:$results/$name.json" >"$results/$name.log" 2>&1; then
    unit_failed_bins=$((unit_failed_bins + 1))
    echo "FAILED $name:"; grep -E "Failure|FAILED|error" "$results/$name.log" | head -20
  fi
  [[ -f $results/$name.json ]] || { echo "FAILED $name: it did not run"; unit_failed_bins=$((unit_failed_bins + 1)); }
done
# A skipped test is neither passed nor failed: counted apart.
read -r unit_pass unit_fail unit_skip < <(python3 - "$results" <<'PY'
import json, pathlib, sys
p = f = s = 0
for j in pathlib.Path(sys.argv[1]).glob("*.json"):
    for suite in json.loads(j.read_text())["testsuites"]:
        for case in suite["testsuite"]:
            if case.get("failures"):
                f += 1
            elif case.get("result") == "SKIPPED" or case.get("status") == "NOTRUN":
                s += 1
            else:
                p += 1
print(p, f, s)
PY
)
((unit_failed_bins > 0 && unit_fail == 0)) && unit_fail=$unit_failed_bins
echo "unit: $unit_pass passed, $unit_fail failed, $unit_skip skipped"

say "bringing up the local cluster"
it_pass=0 it_fail=1
if "$CRISP_SRC/dev/up.sh" --no-demo; then
  say "integration tests"
  "$CRISP_SRC/tests/integration/run.sh" | tee "$results/integration.log"
  line=$(grep -E '^integration: [0-9]+ passed, [0-9]+ failed$' "$results/integration.log" | tail -1)
  if [[ -n $line ]]; then
    it_pass=$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line")
    it_fail=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  fi
  say "package test: the .deb built, installed and run from its own files"
  if "$CRISP_SRC/tests/package/run.sh"; then it_pass=$((it_pass + 1)); else it_fail=$((it_fail + 1)); fi
else
  echo "FAILED: the local cluster did not come up (counted as one failed test)"
fi

echo "$((unit_pass + it_pass)) passed, $((unit_fail + it_fail)) failed"
((unit_fail + it_fail == 0))
