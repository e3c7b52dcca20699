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
rt=$(mktemp -d /tmp/sb-pxframes-XXXXXX)
chmod 700 "$rt"
export XDG_RUNTIME_DIR=$rt
cpid= ppid_=
# The compositor by its pid too: sway is a child of in-trixie.sh's unshare.
trap 'kill $ppid_ $cpid $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$rt"' EXIT
pid=
case $which in
weston)
	command -v weston >/dev/null || { echo "SKIP: weston is not installed"; exit 77; }
	weston --backend=headless --renderer=pixman --shell=desktop --socket=comp --idle-time=0 \
		--log="$rt/weston.log" 2>/dev/null &
	cpid=$!
	comm=weston
	;;
sway)
	[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: sway runs from the Debian 13 root in the test guest"; exit 77; }
	# sway reads its config and makes its socket under /run/user/0 (the
	# only run folder the root shares, scripts/vm/in-trixie.sh)
	rt=/run/user/0/sb-pxframes.$$
	mkdir -p "$rt" && chmod 700 "$rt"
	export XDG_RUNTIME_DIR=$rt
	printf 'output HEADLESS-1 resolution 1024x768\n' >"$rt/config"
	WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=gles2 WAYLAND_DISPLAY= \
		SYNCBRIDGE_TRIXIE_DRI=virtio_gpu "$here/scripts/vm/in-trixie.sh" /usr/bin/sway -c "$rt/config" \
		>"$rt/sway.log" 2>&1 &
	cpid=$!
	comm=sway
	;;
*)
	echo "usage: wl_proxy_frames.sh weston|sway PROXY BENCH [ARGS...]" >&2
	exit 2
	;;
esac
# The compositor's socket, then its pid by name (in-trixie.sh runs sway as
# a child of its own).
i=0
until sock=$(cd "$rt" && ls wayland-* comp 2>/dev/null | grep -v lock | head -1) && [ -n "$sock" ] && [ -S "$rt/$sock" ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "Bail out! $which did not make its socket in 60 s"; exit 1; }
	sleep 0.1
done
pid=$(pgrep -nx "$comm")
[ -n "$pid" ] || { echo "Bail out! no $comm process"; exit 1; }
WAYLAND_DISPLAY=$sock "$proxy" --socket px >"$rt/proxy.log" 2>&1 &
ppid_=$!
i=0
until [ -S "$rt/px" ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "Bail out! the proxy did not make its socket in 60 s"; exit 1; }
	sleep 0.1
done
sleep 1 # the proxy reads every protocol XML at start, then asks the compositor for its globals
echo "# $which (pid $pid) on $sock, syncbridge-wl-proxy (pid $ppid_) on px"
"$bench" --direct "$sock" --proxied px --compositor-pid "$pid" --proxy-pid "$ppid_" "$@"
