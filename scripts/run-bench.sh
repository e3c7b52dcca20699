#!/usr/bin/env bash
# Set up, build (release, -O2) and run every benchmark under bench/ once, in
# one test-guest boot (or natively on a host with vgem + /dev/udmabuf), and
# keep the output in $SYNCBRIDGE_BENCH_BUILD/bench-output.txt. The figures and
# what they mean: docs/performance.md.
#
#   scripts/run-bench.sh [NAME...]      (default: every benchmark)
#
# The GPU benchmarks (bench/run-all.sh --names gpu: vk-cube-virgl) run in a
# second boot, of the GPU guest (SYNCBRIDGE_VM_GPU=virgl, Mesa virgl); the
# venus ones (--names venus: vk-cube-venus, vk-release-venus) in a third, of the venus guest
# (SYNCBRIDGE_VM_GPU=venus; nested in the plain guest here, ~3 min to boot).
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
# Which names go to which guest: none named means all of both lists.
plain=() gpu=() venus=()
gpu_names=" $(sh "$top/bench/run-all.sh" --names gpu | tr '\n' ' ') "
venus_names=" $(sh "$top/bench/run-all.sh" --names venus | tr '\n' ' ') "
plain_names=" $(sh "$top/bench/run-all.sh" --names plain | tr '\n' ' ') "
for name in "$@"; do
	case $gpu_names$venus_names in
	*" $name "*)
		case $venus_names in *" $name "*) venus+=("$name") ;; *) gpu+=("$name") ;; esac
		;;
	*)
		case $plain_names in
		*" $name "*) plain+=("$name") ;;
		*)
			echo "run-bench.sh: no benchmark named '$name' (plain:$plain_names; GPU guest:$gpu_names; venus guest:$venus_names)" >&2
			exit 2
			;;
		esac
		;;
	esac
done
want_plain=$(($# == 0 || ${#plain[@]} > 0))
want_gpu=$(($# == 0 || ${#gpu[@]} > 0))
want_venus=$(($# == 0 || ${#venus[@]} > 0))

: >"$out"
rc=0
# The guest is given a long limit: lavapipe under TCG is slow.
if [ "$want_plain" = 1 ]; then
	if [ "$mode" = native ]; then
		sh "$top/bench/run-all.sh" "$build" "${plain[@]}" 2>&1 | tee -a "$out"
	else
		echo "run-bench.sh: running in the test VM (this host has no vgem + /dev/udmabuf)"
		"$top/scripts/vm/vm-run.sh" --timeout 3000 -- sh "$top/bench/run-all.sh" "$build" "${plain[@]}" 2>&1 | tee -a "$out"
	fi
	rc=${PIPESTATUS[0]}
fi
if [ "$want_gpu" = 1 ]; then
	if [ "$mode" = native ]; then
		sh "$top/bench/run-all.sh" "$build" --gpu "${gpu[@]}" 2>&1 | tee -a "$out"
	else
		echo "run-bench.sh: the GPU benchmarks, in the GPU guest (SYNCBRIDGE_VM_GPU=virgl)"
		SYNCBRIDGE_VM_GPU=virgl "$top/scripts/vm/vm-run.sh" --timeout 3000 -- \
			sh "$top/bench/run-all.sh" "$build" --gpu "${gpu[@]}" 2>&1 | tee -a "$out"
	fi
	gpu_rc=${PIPESTATUS[0]}
	[ "$rc" != 0 ] || rc=$gpu_rc
fi
if [ "$want_venus" = 1 ]; then
	echo "run-bench.sh: the venus benchmarks, in the venus guest (SYNCBRIDGE_VM_GPU=venus)"
	SYNCBRIDGE_VM_GPU=venus "$top/scripts/vm/vm-run.sh" --timeout 1500 -- \
		sh "$top/bench/run-all.sh" "$build" --venus "${venus[@]}" 2>&1 | tee -a "$out"
	venus_rc=${PIPESTATUS[0]}
	[ "$rc" != 0 ] || rc=$venus_rc
fi
echo "run-bench.sh: output kept in $out"
exit "$rc"
