#!/bin/sh
# SPDX-License-Identifier: MIT
# syncbridge-wl-proxy in front of a wlroots compositor that lacks
# linux-drm-syncobj-v1 (issue 46): sway 1.10.1 or labwc 0.8.3 (wlroots 0.18)
# or wayfire 0.9.0 (wlroots 0.17, run as nobody: testbed/wayland/wlroots.sh)
# from the Debian 13 root (scripts/setup.sh), headless, GLES2 renderer on
# virgl, started in the GPU guest through scripts/vm/in-trixie.sh and shown
# only virtio_gpu's /dev/dri nodes (wlroots' headless backend has no DRM fd
# of its own and opens the first render node: vgem's would give it no EGL).
#
#  1. wayland-info (Debian 13's) lists the compositor's globals: it must NOT
#     advertise wp_linux_drm_syncobj_manager_v1 (else the proxy would only
#     forward, and this test would prove nothing).
#  2. syncbridge-wl-client through the proxy, 5 frames on virtio_gpu dumb
#     buffers (no implicit fence: the producer's vgem fence is only in the
#     timeline point), --expect syncobj (the proxy's global) --strict (no
#     presentation event before the point signalled), fenced releases, no
#     protocol error; and --hook grim-shot.py: a grim screenshot while each
#     frame's point is pending must not show its colour, one after it was
#     presented must (pixel_check.py's rule). The proxy runs under
#     SYNCBRIDGE_DEBUG: it must say it held at least one commit, and its lines
#     list the compositor's globals it hides (no XML).
#
# --control: the proxy with --no-wait (commits forwarded at once), 4 frames
# rendered for 1 s each: passes only if the compositor then presented a frame
# before its point AND a screenshot showed a frame's colour before its point,
# i.e. the checks of the plain run can fail on this compositor.
#
#   proxy-wlroots.sh [--control] sway|labwc|wayfire PROXY CLIENT
#
# Root: SYNCBRIDGE_TRIXIE_ROOT, else the venus root (scripts/setup.sh).
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (not in the guest, no /dev/dri, the
# compositor or grim not in the root).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
intrixie=$here/scripts/vm/in-trixie.sh
usage="usage: proxy-wlroots.sh [--control] sway|labwc|wayfire PROXY CLIENT"
control=0
[ "${1:-}" = --control ] && { control=1; shift; }
[ $# = 3 ] || { echo "$usage"; exit 2; }
comp=$1 proxy=$2 client=$3
case $comp in sway | labwc | wayfire) ;; *) echo "$usage"; exit 2 ;; esac
[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: runs in the test guest"; exit 77; }
[ -e /dev/dri ] || { echo "SKIP: no /dev/dri"; exit 77; }
cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
root=${SYNCBRIDGE_TRIXIE_ROOT:-$cache/venus-root}
export SYNCBRIDGE_TRIXIE_ROOT=$root
for b in "$comp" grim wayland-info; do
	[ -x "$root/usr/bin/$b" ] ||
		{ echo "SKIP: /usr/bin/$b not in $root (scripts/setup.sh installs it)"; exit 77; }
done
pkgver() { awk -v p="$1" '$0 == "Package: " p {f=1} f && /^Version:/ {print $2; exit}' "$root/var/lib/dpkg/status"; }
echo "# $comp $(pkgver "$comp"), grim $(pkgver grim) from $root, /dev/dri: virtio_gpu only"

# The runtime folder is bound into the root (in-trixie.sh binds /run/user/0;
# its /tmp is private): the compositor's socket, grim's and the proxy's.
mkdir -p /run/user/0
rt=$(mktemp -d /run/user/0/sbwlr-XXXXXX)
chmod 700 "$rt"
export XDG_RUNTIME_DIR=$rt
unset WAYLAND_DISPLAY DISPLAY WAYLAND_SOCKET
log=$rt/$comp.log
# shellcheck source=stop-group.sh
. "$(dirname "$0")/stop-group.sh"
. "$(dirname "$0")/peer-globals.sh"
. "$here/testbed/wayland/wlroots.sh"
cpid=
cleanup() {
	[ -z "$cpid" ] || stop_group "$cpid"
	echo "# $comp log (filtered, $(wc -l <"$log") lines):"
	grep -iE 'error|fail|warn|egl|render|drm|dmabuf|syncobj' "$log" | cut -c1-240 | head -n 30 |
		sed 's/^/#   /'
	rm -rf "$rt"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

t0=$(date +%s)
wlroots_start "$comp" "$log"
cpid=$wlr_pid sock=$wlr_sock
[ -n "$sock" ] || { echo "not ok - $comp did not start (no socket after $(( $(date +%s) - t0 )) s)"; exit 1; }
echo "# $comp socket $sock after $(( $(date +%s) - t0 )) s"

# The globals, until the client's needs are there (a bound of 60 s).
info=$rt/wayland-info.txt
peer_globals "$info" "$sock" "$cpid" "$t0" 60 zwp_linux_dmabuf_v1 xdg_wm_base
if grep -q "'wp_linux_drm_syncobj_manager_v1'" "$info"; then
	echo "not ok - $comp advertises wp_linux_drm_syncobj_manager_v1: the proxy would only forward"
	exit 1
fi
echo "ok - $comp has no wp_linux_drm_syncobj_manager_v1"
grep -q "'zwp_linux_dmabuf_v1'" "$info" ||
	{ echo "not ok - $comp has no zwp_linux_dmabuf_v1: the client's dma-bufs cannot reach it"; exit 1; }

hook="/usr/bin/python3 $here/tests/wayland/grim-shot.py --socket $sock"
if [ $control = 1 ]; then
	out=$(WAYLAND_DISPLAY=$sock timeout 200 "$proxy" --socket px --no-wait -- "$client" --frames 4 \
		--render-ms 1000 --buffers virtio_gpu --expect syncobj --strict --hook "$hook" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# control: /'
	fail=0
	if echo "$out" | grep -qE ' [1-9][0-9]* presented before their fence'; then
		echo "ok - control: with --no-wait, $comp presented frames before their point (exit $rc)"
	else
		echo "not ok - control: $comp presented no frame before its point (exit $rc)"; fail=1
	fi
	if echo "$out" | grep -qE '\([1-9][0-9]* frames on screen before their fence'; then
		echo "ok - control: grim showed a frame's colour on $comp before its point"
	else
		echo "not ok - control: no screenshot showed a frame early: the pixel check cannot fail here"
		fail=1
	fi
	exit $fail
fi
# SYNCBRIDGE_DEBUG for the proxy alone: its lines say which of the
# compositor's globals it left out (no XML) and each commit it held.
out=$(WAYLAND_DISPLAY=$sock SYNCBRIDGE_DEBUG=1 timeout 200 "$proxy" --socket px -- \
	env -u SYNCBRIDGE_DEBUG "$client" --frames 5 --render-ms 400 --buffers virtio_gpu --expect syncobj \
	--strict --timing --hook "$hook" 2>&1)
rc=$?
echo "$out" | sed 's/^/# proxy: /'
fail=0
held=$(echo "$out" | grep -c 'commit held until its acquire point signals')
[ "$held" -ge 1 ] && echo "ok - the proxy held $held commits for their points" ||
	{ echo "not ok - the proxy held no commit"; fail=1; }
[ $rc = 0 ] && echo "ok - $comp behind the proxy: syncobj, no frame presented before its point" ||
	{ echo "not ok - $comp behind the proxy (exit $rc)"; fail=1; }
echo "$out" | grep -qE 'releases: [1-9][0-9]* fenced' && echo "ok - fenced releases through the proxy" ||
	{ echo "not ok - no fenced release through the proxy"; fail=1; }
echo "$out" | grep -q 'protocol error' && { echo "not ok - protocol error"; fail=1; }
# A hook slow enough (a loaded machine) lets vgem signal a fence itself: the
# compositor then rightly shows the frame before the client's signal, which
# the checks above count as early. Named here so that it is not read as the
# proxy's fault (docs/testing.md).
echo "$out" | grep -qE '[1-9][0-9]* fences expired' &&
	echo "not ok - vgem fences expired (~10 s) during slow screenshots: those frames are not judged"
echo "$out" | grep -qE 'pixel checks: [1-9][0-9]* passed, 0 failed' &&
	echo "ok - $comp's screenshots: no frame on screen before its point, each one after" ||
	{ echo "not ok - $comp's screenshots (the grim-shot lines above)"; fail=1; }
exit $fail
