#!/bin/bash
# Runs every libFuzzer target under ASan + UBSan from its seed corpus in
# tests/fuzz/corpus/TARGET and prints a table: target, executions, crashes.
#   tests/fuzz/run.sh [RUNS [TARGET...]]   RUNS executions per target (default 1000000), every target by default
# Crash inputs are kept in build-fuzz/crashes/TARGET/. Exit status: 1 if any crashed.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-1000000}
shift || true
build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
if [[ ! -d $build ]]; then
  CC=clang CXX=clang++ meson setup "$build" "$src" -Dfuzz=true -Dtests=disabled -Dbuildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
    -Dc_args='-fno-sanitize-recover=all' >/dev/null
fi
targets=(image_ref mount_spec options netrc docker_config cdi gres wire site_files)
(($# > 0)) && targets=("$@")
exes=("${targets[@]/%/_fuzz}")
ninja -C "$build" "${exes[@]/#/tests/fuzz/}" >/dev/null
printf '| %-14s | %12s | %7s | %8s |\n|%s|%s|%s|%s|\n' target executions crashes seconds \
  ---------------- -------------- --------- ----------
crashed=0
for t in "${targets[@]}"; do
  work=$build/corpus/$t crashes=$build/crashes/$t
  mkdir -p "$work" "$crashes"
  cp -n "$src/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  t0=$SECONDS rc=0
  "$build/tests/fuzz/${t}_fuzz" -runs="$runs" -max_len=4096 -timeout=10 -report_slow_units=60 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" -print_final_stats=1 "$work" >"$build/$t.log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$build/$t.log")
  # A slow-unit file says the machine stalled, not that the code failed.
  found=$(find "$crashes" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  ((rc != 0 || found > 0)) && crashed=1
  printf '| %-14s | %12s | %7s | %8s |\n' "$t" "${execs:-?}" "$found" $((SECONDS - t0))
done
exit $crashed
