#!/bin/bash
# bench/crispd_spares.sh N [U]: restarts both dev nodes' crispd with --spares N (0: none) and
# --spares-per-user U (crispd's default if not given), for bench.py's spares off/on halves and its
# bursts; bench/run.sh restarts them as the cluster had them at its end.
export CRISP_SPARES=$1 CRISP_SPARES_PER_USER=${2:-}
source "$(dirname "$0")/../dev/lib.sh"
source "$CRISP_SRC/dev/node2.sh"
start_crispd
start_crispd_on "$NODE2" "$RUN/crispd-n2.pid" crispd-n2 nsenter --mount="$NODE2_MNT" --
