#!/usr/bin/env bash
# Set everything up, build, and run the main demo, syncbridge-demo-cube: a
# Vulkan producer process renders a rotating cube into a ring of dma-bufs
# through the syncbridge layer; a consumer process (EGL/GLES through the EGL
# bridge) composites every frame and checks that it is complete. Then the same
# pipeline without syncbridge (SYNCBRIDGE_DISABLE=1), where the consumer shows
# half-drawn frames. Both runs write PNGs (a contact sheet and a few frames).
#
# Runs in the test VM (scripts/vm/vm-run.sh) unless this host has vgem and
# /dev/udmabuf itself (then natively, as root).
#
#   scripts/run-demo.sh [cube | cube-virgl | cube-venus | camera-pipewire | handoff]   (default: cube)
#
# cube-virgl: the same cube pipeline on a real asynchronous GPU — a GLES
# producer and the EGL consumer on Mesa virgl, in the GPU guest
# (SYNCBRIDGE_VM_GPU=virgl: QEMU's virtio-gpu-gl under a private Xvfb); the
# ring is the GPU's own textures shared as dma-bufs (docs/demo.md, "On virgl").
# Not native: it needs that guest.
#
# cube-venus: the Vulkan pipeline on Mesa's venus, a driver that puts no
# implicit fence on dma-bufs (like NVIDIA's): producer and Vulkan consumer on
# venus in the venus guest (SYNCBRIDGE_VM_GPU=venus, nested in the plain guest
# here: ~2 min to boot); the ring is venus's own LINEAR images exported as
# dma-bufs (--ring device: venus imports no other driver's buffers).
# SYNCBRIDGE_DEMO_FRAMES defaults to 30 here.
#
# camera-pipewire: a camera across processes through PipeWire — vivid → a
# producer process whose "GPU" writes each frame after it was queued, behind
# a pending vgem fence → a private PipeWire daemon → an EGL/GLES consumer
# process that checks every frame (examples/camera-pipewire/, docs/demo.md,
# "The camera across processes"). SYNCBRIDGE_DEMO_FRAMES defaults to 48 here.
#
# handoff: the smaller demo — one vgem buffer with a pending write fence,
# waited for through libsyncbridge (examples/handoff.c).
#
# Environment: SYNCBRIDGE_BUILD (default: build), SYNCBRIDGE_SETUP=0,
# SYNCBRIDGE_VM (auto | qemu | native), SYNCBRIDGE_DEMO_OUTPUT (default:
# $SYNCBRIDGE_BUILD/demo-output), SYNCBRIDGE_DEMO_FRAMES (default: 120).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SYNCBRIDGE_BUILD:-$top/build}
which=${1:-cube}
cd "$top"

case $which in
cube | cube-virgl | cube-venus | camera-pipewire | handoff) ;;
-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
*) echo "run-demo.sh: unknown demo '$which' (cube, cube-virgl, cube-venus, camera-pipewire or handoff)" >&2; exit 2 ;;
esac

# Setup installs packages: as a normal user, this script runs again with sudo.
# shellcheck source=common.sh
. "$top/scripts/common.sh"
sb_setup "$top/scripts/run-demo.sh" "$@"
sb_build "$build"
build=$(cd "$build" && pwd -P)

# shellcheck source=vm/vm-common.sh
. "$top/scripts/vm/vm-common.sh"
mode=$(sb_vm_mode)
if [ "$which" = cube-virgl ]; then
	mode=qemu
	export SYNCBRIDGE_VM_GPU=virgl
fi
if [ "$which" = cube-venus ]; then
	mode=qemu
	export SYNCBRIDGE_VM_GPU=venus
	# venus only: the guest also has lavapipe, which the demo would pick.
	export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/virtio_icd.json
fi
# A build tree under /tmp must be the host's /tmp in the guest, not a fresh tmpfs.
case $build in /tmp/*) export SYNCBRIDGE_VM_TMP=${SYNCBRIDGE_VM_TMP:-host} ;; esac

run() { # SCRIPT [RESULTS_DIR]
	if [ "$mode" = native ]; then
		sh -c "$1"
	elif [ -n "${2:-}" ]; then
		"$top/scripts/vm/vm-run.sh" --results "$2" -- sh -c "$1"
	else
		"$top/scripts/vm/vm-run.sh" -- sh -c "$1"
	fi
}

if [ "$which" = handoff ]; then
	demo="$build/examples/syncbridge-demo-handoff"
	script='echo "== with syncbridge: the consumer waits for the producer fence =="; '"$demo"'; '
	script+='echo; echo "== SYNCBRIDGE_DISABLE=1: the consumer reads without waiting =="; SYNCBRIDGE_DISABLE=1 '"$demo"
	run "$script"
	exit
fi

# The demo's pictures go to $out, a fresh folder; $frames per run.
prepare_output() { # DEFAULT_FRAMES
	out=${SYNCBRIDGE_DEMO_OUTPUT:-$build/demo-output}
	frames=${SYNCBRIDGE_DEMO_FRAMES:-$1}
	rm -rf "$out"
	mkdir -p "$out"
	out=$(cd "$out" && pwd -P)
}

# Runs the two-run $script, then the summary; exits with the runs' status.
both_runs() { # WHAT_THE_BRIDGE_DOES HOW_IT_IS_OFF BRIDGED_COMMAND UNBRIDGED_COMMAND
	# The script of both runs, each with its own --output; it fails if either does.
	script='echo "== 1/2 with syncbridge: '"$1"' =="; '
	script+="$3 --output '$out/bridged'; a=\$?; "
	script+='echo; echo "== 2/2 without syncbridge ('"$2"'): the same pipeline =="; '
	script+="$4 --output '$out/no-bridge'; b=\$?; "
	script+='[ $a = 0 ] && [ $b = 0 ]'
}

run_and_summarize() { # PICTURES_NOTE
	local rc=0 bridged contrast
	run "$script" "$out" | tee "$out/demo.log" || rc=$?
	rm -rf "$out/.vm"
	bridged=$(grep -m1 '^frames=' "$out/demo.log" || true)
	contrast=$(grep '^frames=' "$out/demo.log" | sed -n 2p || true)
	echo
	echo "== summary =="
	echo "with syncbridge:    ${bridged:-(no result)}"
	echo "without syncbridge: ${contrast:-(no result)}"
	echo "pictures:           $out/bridged/contact-sheet.png, $out/no-bridge/contact-sheet.png"
	echo "                    ($1)"
	exit "$rc"
}

if [ "$which" = camera-pipewire ]; then
	demo="$build/examples/camera-pipewire/syncbridge-demo-camera-pw"
	if [ ! -x "$demo" ]; then
		echo "run-demo.sh: $demo was not built: it needs libpipewire-0.3 >= 1.2, EGL and" \
			"GLESv2 (scripts/setup.sh installs them)" >&2
		exit 1
	fi
	prepare_output 48
	# vivid loads with the guest's other modules at boot.
	export SYNCBRIDGE_VM_MODULES="${SYNCBRIDGE_VM_MODULES:-} vivid"
	[ "$mode" = native ] || echo "run-demo.sh: running in the test VM (vivid, vgem, udmabuf, a PipeWire daemon of its own); pictures come back to $out"
	pw="$top/examples/camera-pipewire/camera-pw.sh"
	both_runs "the consumer's GL waits for each frame's acquire point, the producer for its release" \
		"SYNCBRIDGE_DISABLE=1 on both processes" \
		"'$pw' '$demo' --frames $frames" "'$pw' '$demo' --frames $frames --control"
	run_and_summarize "green border = whole frame, red = torn; the first torn frames beside them"
fi

demo="$build/examples/cube/syncbridge-demo-cube"
if [ ! -x "$demo" ]; then
	echo "run-demo.sh: $demo was not built: it needs the Vulkan, EGL and GLESv2" \
		"headers and glslangValidator (scripts/setup.sh installs them)" >&2
	exit 1
fi
# The build tree's layer (an installed demo uses the one the loader finds).
cube="'$demo' --layer-dir '$build/manifest'"
if [ "$which" = cube-venus ]; then
	prepare_output 30
else
	prepare_output 120
fi

if [ "$which" = cube-venus ]; then
	echo "run-demo.sh: running in the venus guest (nested: ~2 min to boot); pictures come back to $out"
	# Read at once with heavy frames, as the venus group's pair: the race shows.
	venus="--ring device --consumer vulkan --refresh-ms 0 --work 48"
	both_runs "the layer fences the producer's frames on venus, the consumer's layer waits" \
		"SYNCBRIDGE_DISABLE=1" "$cube $venus --frames $frames" \
		"$cube $venus --frames $frames --no-bridge --expect-race"
elif [ "$which" = cube-virgl ]; then
	echo "run-demo.sh: running in the GPU guest (Mesa virgl); pictures come back to $out"
	both_runs "sb_egl_dmabuf_attach fences the producer's frames, the consumer waits" \
		"SYNCBRIDGE_DISABLE=1" "$cube --producer gles --frames $frames" \
		"$cube --producer gles --frames $frames --no-bridge --expect-race"
else
	[ "$mode" = native ] || echo "run-demo.sh: running in the test VM (this host has no vgem + /dev/udmabuf); pictures come back to $out"
	both_runs "the layer fences the producer's frames, the consumer waits" "SYNCBRIDGE_DISABLE=1" \
		"$cube --frames $frames" "$cube --frames $frames --no-bridge --expect-race"
fi
run_and_summarize "and single frames, the first torn one, beside them"
