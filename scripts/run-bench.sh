#!/usr/bin/env bash
# Set up, build (release, -O2) and run every benchmark under bench/ once, in
# one test-guest boot (or natively on a host with vgem + /dev/udmabuf), and
# keep the output in $SYNCBRIDGE_BENCH_BUILD/bench-output.txt. The figures and
# what they mean: docs/performance.md.
#
#   scripts/run-bench.sh [NAME...]      (default: every benchmark)
#
# Absolute times under TCG mean little: every benchmark prints ratios taken
# in the same run, with interleaved iterations, against its floor.
#
# Environment: SYNCBRIDGE_BENCH_BUILD (default: build-bench), SYNCBRIDGE_SETUP=0
# to skip scripts/setup.sh, SYNCBRIDGE_VM (auto | qemu | native).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SYNCBRIDGE_BENCH_BUILD:-$top/build-bench}
cd "$top"
case ${1:-} in
-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

# Setup installs packages: as a normal user, this script runs again with sudo.
# shellcheck source=common.sh
. "$top/scripts/common.sh"
sb_setup "$top/scripts/run-bench.sh" "$@"
sb_build "$build" --buildtype=release -Dtests=true
build=$(cd "$build" && pwd -P)

# shellcheck source=vm/vm-common.sh
. "$top/scripts/vm/vm-common.sh"
mode=$(sb_vm_mode)
case $build in /tmp/*) export SYNCBRIDGE_VM_TMP=${SYNCBRIDGE_VM_TMP:-host} ;; esac

out=$build/bench-output.txt
# The guest is given a long limit: lavapipe under TCG is slow.
if [ "$mode" = native ]; then
	sh "$top/bench/run-all.sh" "$build" "$@" 2>&1 | tee "$out"
else
	echo "run-bench.sh: running in the test VM (this host has no vgem + /dev/udmabuf)"
	"$top/scripts/vm/vm-run.sh" --timeout 3000 -- sh "$top/bench/run-all.sh" "$build" "$@" 2>&1 | tee "$out"
fi
rc=${PIPESTATUS[0]}
echo "run-bench.sh: output kept in $out"
exit "$rc"
