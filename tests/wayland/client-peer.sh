#!/bin/sh
# SPDX-License-Identifier: MIT
# The client helper against the example compositor: syncbridge-wl-client
# presents frames whose acquire fences are pending vgem fences, with the
# protocol the helper picks (or is limited to), and must never see a frame
# presented before its fence signalled (--strict).
#
#   client-peer.sh COMPOSITOR CLIENT syncobj|v1|implicit [--gpu-wait] [--control]
#
# --gpu-wait: the compositor holds commits only until their fence exists
# (SB_WL_SERVER_WAIT_MATERIALIZED); its GL renderer's copy waits for the
# fence on the GPU (the EGL bridge) and "presented" waits for the repaint's
# fence. The same --strict check: no frame presented before its fence.
#
# --control: the compositor does not wait — for dma-buf fences in implicit
# mode (--no-implicit-wait), for acquire fences and points otherwise
# (--no-wait) — and its GL renderer's EGL bridge is off (SYNCBRIDGE_DISABLE=1:
# sb_egl_sync_file_wait / sb_egl_dmabuf_wait order nothing; with the bridge on
# they hold the copy until the fence, a CPU stall in llvmpipe, and no frame is
# early); passes only if frames are then presented early.
#
# Pings: in the normal runs the compositor pings every 0.8 s and ends a
# client that leaves one unanswered for 1.6 s (--ping-timeout-ms), and the
# client renders 6 frames of 0.4 s: it must answer every ping, the first one
# (sent at bind) included, for as long as it runs (its listener goes on at
# bind; an event reaching a proxy without one is dropped). Both are times
# SYNCBRIDGE_VM_TIMEOUT_SCALE: the sanitizer and valgrind setups slow the
# client down.
#
# Timing: the client commits, then "renders" (dispatching) for --render-ms
# before it signals; a frame counts as early when its wp_presentation
# "presented" event (sent by the repaint that composited the commit's copy)
# arrived before the signal. The normal runs need no timing (the compositor
# waits for the fence, whenever it signals). The control needs the compositor
# to take a commit and repaint within the render time for at least one of 4
# frames: it renders 500 ms there (a commit is taken within a few ms and the
# 60 Hz repaint follows within 17 ms plus the drawing; tens of ms under a busy
# loop per host core); the normal runs render 0.4 s (see Pings).
#
# Under the valgrind test setup the guest batch wraps only this script, which
# runs as it is: both programs are started under SYNCBRIDGE_VM_WRAPPER (the
# valgrind wrapper) here, so the helpers' code in them is checked. The
# compositor's exit status counts (it exits 0 on SIGTERM): a sanitizer or
# memcheck report in it (LSan and memcheck's leak check run at that exit)
# fails the test.
set -u
comp=$1 client=$2 mode=$3 control= gpuwait=
shift 3
for a; do
	case $a in
	--control) control=--control ;;
	--gpu-wait) gpuwait=--gpu-wait ;;
	*) echo "usage: client-peer.sh COMPOSITOR CLIENT syncobj|v1|implicit [--gpu-wait] [--control]" >&2; exit 2 ;;
	esac
done
wrap=${SYNCBRIDGE_VM_WRAPPER:-}
case $mode in
syncobj) cargs="--expect syncobj" ;;
v1) cargs="--no-drm-syncobj --expect v1" ;;
implicit) cargs="--no-drm-syncobj --no-explicit-v1 --expect implicit" ;;
*) echo "usage: $0 COMPOSITOR CLIENT syncobj|v1|implicit [--gpu-wait] [--control]" >&2; exit 2 ;;
esac
[ -e /dev/dri ] || { echo "SKIP: no /dev/dri (vgem makes the fences)"; exit 77; }
. "$(dirname "$0")/../../testbed/wayland/wait.sh"
. "$(dirname "$0")/../../testbed/wayland/compositor.sh"
compositor_dir sbwl-peer
scale=${SYNCBRIDGE_VM_TIMEOUT_SCALE:-1}
compargs="--ping-timeout-ms $((1600 * scale))" frames=6 render_ms=$((400 * scale)) compenv=
if [ "$control" = --control ]; then
	frames=4 render_ms=500 compenv=SYNCBRIDGE_DISABLE=1
	[ $mode = implicit ] && compargs=--no-implicit-wait || compargs=--no-wait
	# With --gpu-wait the control keeps the mode and loses the GPU wait only.
	[ -n "$gpuwait" ] && compargs=
fi
compargs="$compargs $gpuwait"
compositor_start env $compenv $wrap "$comp" --socket peer --ready-fd 3 $compargs
out=$(WAYLAND_DISPLAY=peer $wrap "$client" --frames $frames --render-ms $render_ms --strict $cargs 2>&1)
rc=$?
echo "$out"
compositor_stop
[ $rc = 77 ] && exit 77
if [ "$control" = --control ]; then
	if echo "$out" | grep -qE ' [1-9][0-9]* presented before their fence'; then
		echo "ok - control: without the compositor's wait, frames were presented before their fence"
		exit 0
	fi
	echo "not ok - control: the race was not observed"
	exit 1
fi
[ $rc = 0 ] && echo "ok - $mode: every frame presented after its fence, releases honoured" || echo "not ok - $mode (exit $rc)"
exit $rc
