#!/bin/sh
# Run every benchmark once, in order, printing each one's output between
# "== NAME ==" lines; runs where the kernel is (the test guest, or a real DRM
# host). Called by scripts/run-bench.sh; BUILD is the build folder.
#
#   bench/run-all.sh BUILD [--gpu|--venus] [NAME...]   (default: every benchmark)
#   bench/run-all.sh --names plain|gpu|venus         (the names of each list)
#
# --gpu runs the GPU list instead: benchmarks for the GPU guest (Mesa virgl,
# SYNCBRIDGE_VM_GPU=virgl), which scripts/run-bench.sh boots separately;
# --venus the venus list (Mesa venus, SYNCBRIDGE_VM_GPU=venus, Vulkan = venus only).
#
# A benchmark that fails is reported and the others still run; the exit
# status is the number of failures (capped at 100).
gpu_list='
vk-cube-virgl bench/bench-vk-cube --producer gles
e2e-weston bench/bench-e2e-weston --gpu-wait-too
e2e-kwin bench/bench-e2e-weston --anchor kwin
'
venus_list='
vk-cube-venus bench/bench-vk-cube --runs 3 --frames 24 -- --ring device --consumer vulkan
vk-release-venus bench/bench-vk-release --iterations 20
'
# NAME<space>PROGRAM ARGS (relative to BUILD); keep in the order of
# docs/performance.md.
list='
vk-submit bench/bench-vk-submit
vk-acqrel bench/bench-vk-acqrel
wake bench/bench-wake
waiters bench/bench-waiters
merge bench/bench-merge
compositor-v1 bench/bench-compositor --proto v1
compositor-syncobj bench/bench-compositor --proto syncobj
vk-cube bench/bench-vk-cube
pw-cost bench/bench-pw-cost
wl-proxy bench/bench-wl-proxy
'
if [ "${1:-}" = --names ]; then
	case ${2:-} in
	plain) printf '%s\n' "$list" ;;
	gpu) printf '%s\n' "$gpu_list" ;;
	venus) printf '%s\n' "$venus_list" ;;
	*) echo "usage: run-all.sh --names plain|gpu|venus" >&2; exit 2 ;;
	esac | awk 'NF { print $1 }'
	exit 0
fi
build=${1:?usage: run-all.sh BUILD [--gpu] [NAME...]}
shift
case ${1:-} in
--gpu) list=$gpu_list; shift ;;
--venus)
	list=$venus_list
	export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/share/vulkan/icd.d/virtio_icd.json}
	shift
	;;
esac
fail=0
while read -r name prog args; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ]; then
		want=0
		for n in "$@"; do [ "$n" = "$name" ] && want=1; done
		[ $want = 1 ] || continue
	fi
	echo "== $name =="
	# shellcheck disable=SC2086
	if ! "$build/$prog" $args; then
		echo "== $name: FAILED (exit $?) =="
		fail=$((fail + 1))
	fi
	echo
done <<END
$list
END
[ $fail -gt 100 ] && fail=100
exit $fail
