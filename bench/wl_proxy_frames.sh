#!/bin/sh
# SPDX-License-Identifier: MIT
# syncbridge-wl-proxy's cost on a real compositor (issue 46; docs/performance.md,
# figure 10): starts the compositor headless and the proxy in front of it,
# then bench-wl-proxy-frames with one window on each (frame latency, and
# compositor + proxy CPU a frame, proxied / direct, from one run).
#
#   wl_proxy_frames.sh weston|sway PROXY BENCH [BENCH ARGS...]
#
# weston: Weston 14 (bookworm-backports), headless, the pixman renderer and
# the desktop shell (kiosk-shell shows one window at a time, and a hidden
# window gets no frame callbacks): any host. sway: sway 1.10.1 from the
# Debian 13 root (scripts/vm/in-trixie.sh), headless with the GLES2 renderer:
# the GPU guest. Exits 77 when the compositor is not there.
set -u
which=${1:?usage: wl_proxy_frames.sh weston|sway PROXY BENCH [ARGS...]}
proxy=${2:?} bench=${3:?}
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
intrixie=$here/scripts/vm/in-trixie.sh
. "$here/tests/wayland/stop-group.sh"
. "$here/testbed/wayland/wlroots.sh"
cpid= ppid_=
case $which in
weston)
	command -v weston >/dev/null || { echo "SKIP: weston is not installed"; exit 77; }
	rt=$(mktemp -d /tmp/sb-pxframes-XXXXXX)
	;;
sway)
	[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: sway runs from the Debian 13 root in the test guest"; exit 77; }
	# the only run folder the root shares (scripts/vm/in-trixie.sh)
	mkdir -p /run/user/0
	rt=$(mktemp -d /run/user/0/sb-pxframes-XXXXXX)
	;;
*)
	echo "usage: wl_proxy_frames.sh weston|sway PROXY BENCH [ARGS...]" >&2
	exit 2
	;;
esac
chmod 700 "$rt"
export XDG_RUNTIME_DIR=$rt
unset WAYLAND_DISPLAY
# Both started in a session of their own: one stop_group ends each whole.
trap '[ -z "$ppid_" ] || stop_group "$ppid_"; [ -z "$cpid" ] || stop_group "$cpid"; rm -rf "$rt"' EXIT
# wait_socket NAME WHO: until $rt/NAME is a socket, 60 s at most.
wait_socket() {
	i=0
	until [ -S "$rt/$1" ]; do
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "Bail out! $2 did not make its socket in 60 s"; exit 1; }
		sleep 0.1
	done
}
if [ "$which" = weston ]; then
	setsid weston --backend=headless --renderer=pixman --shell=desktop --socket=comp --idle-time=0 \
		--log="$rt/weston.log" 2>/dev/null &
	cpid=$!
	sock=comp
	wait_socket comp weston
	pid=$cpid
else
	wlroots_start sway "$rt/sway.log" || { echo "Bail out! sway did not make its socket in 60 s"; exit 1; }
	cpid=$wlr_pid sock=$wlr_sock
	# sway's own pid for its CPU time: cpid is in-trixie.sh's, above it
	pid=$(pgrep -nx sway)
	[ -n "$pid" ] || { echo "Bail out! no sway process"; exit 1; }
fi
WAYLAND_DISPLAY=$sock setsid "$proxy" --socket px >"$rt/proxy.log" 2>&1 &
ppid_=$!
wait_socket px "the proxy"
sleep 1 # the proxy reads every protocol XML at start, then asks the compositor for its globals
echo "# $which (pid $pid) on $sock, syncbridge-wl-proxy (pid $ppid_) on px"
"$bench" --direct "$sock" --proxied px --compositor-pid "$pid" --proxy-pid "$ppid_" "$@"
