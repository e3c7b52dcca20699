#!/bin/sh
# SPDX-License-Identifier: MIT
# syncbridge-wl-proxy in front of a compositor without linux-drm-syncobj-v1:
# our compositor with --no-drm-syncobj --no-implicit-wait
# (it waits for nothing: whatever reaches it is shown at its next repaint),
# syncbridge-wl-client through the proxy with pending acquire points (vgem
# fences imported into timeline points), --expect syncobj --strict: the
# client must find the proxy's wp_linux_drm_syncobj_manager_v1 and see no
# frame presented before its point signalled — the proxy held each commit.
#
#   proxy-peer.sh COMPOSITOR PROXY CLIENT [--control | --passthrough]
#
# --control: the proxy forwards commits at once (--no-wait); passes only if
# frames are then presented before their points (the same scenario, the
# proxy's hold off). Timing as in client-peer.sh: the client renders 400 ms
# (control: 500 ms, 4 frames) between its commit and the signal.
#
# --passthrough: the compositor keeps its own linux-drm-syncobj-v1 (still
# without the implicit wait): the proxy must say it passes it through
# (SYNCBRIDGE_DEBUG) and the client's frames are held by the compositor.
set -u
comp=$1 proxy=$2 client=$3 control= passthrough=
shift 3
for a; do
	case $a in
	--control) control=--control ;;
	--passthrough) passthrough=1 ;;
	*) echo "usage: proxy-peer.sh COMPOSITOR PROXY CLIENT [--control | --passthrough]" >&2; exit 2 ;;
	esac
done
[ -e /dev/dri ] || { echo "SKIP: no /dev/dri (vgem makes the fences)"; exit 77; }
wrap=${SYNCBRIDGE_VM_WRAPPER:-}
. "$(dirname "$0")/../../testbed/wayland/wait.sh"
. "$(dirname "$0")/../../testbed/wayland/compositor.sh"
compositor_dir sbwl-proxy
scale=${SYNCBRIDGE_VM_TIMEOUT_SCALE:-1}
frames=6 render_ms=$((400 * scale)) pargs= cargs=--no-drm-syncobj debug=
[ -n "$control" ] && frames=4 render_ms=500 pargs=--no-wait
[ -n "$passthrough" ] && cargs= debug=1
compositor_start $wrap "$comp" --socket comp --ready-fd 3 $cargs --no-implicit-wait \
	--renderer cpu
out=$(WAYLAND_DISPLAY=comp SYNCBRIDGE_DEBUG=$debug $wrap "$proxy" --socket px $pargs \
	-- "$client" --frames $frames --render-ms $render_ms --strict --expect syncobj 2>&1)
rc=$?
echo "$out"
compositor_stop
[ $rc = 77 ] && exit 77
if [ -n "$control" ]; then
	if echo "$out" | grep -qE ' [1-9][0-9]* presented before their fence'; then
		echo "ok - control: with --no-wait, frames were presented before their point"
		exit 0
	fi
	echo "not ok - control: the race was not observed (exit $rc)"
	exit 1
fi
if [ -n "$passthrough" ] && ! echo "$out" | grep -q "passing it through"; then
	echo "not ok - the proxy did not pass the compositor's linux-drm-syncobj-v1 through"
	exit 1
fi
[ $rc = 0 ] && echo "ok - through the proxy: every frame presented after its point" ||
	echo "not ok - through the proxy (exit $rc)"
exit $rc
