#!/bin/sh
# SPDX-License-Identifier: MIT
# Real linux-drm-syncobj-v1 peers (issue 35): KWin 6.3 (`kwin_wayland
# --virtual`) or mutter 48 (`mutter --headless --virtual-monitor`) from the
# Debian 13 root, started in the GPU (virgl) guest through
# scripts/vm/in-trixie.sh. wayland-info (Debian 13's) lists the peer's
# globals: does it advertise wp_linux_drm_syncobj_manager_v1? The peer's log
# says why not (mutter: "Disabling explicit sync: <reason>", a
# META_DEBUG_WAYLAND message, so MUTTER_DEBUG=wayland is set).
#
# With CLIENT (syncbridge-wl-client) and the global there, the client then
# presents 5 frames on virtio_gpu dumb buffers (the peers' EGL imports them;
# not vgem's) whose acquire points are pending vgem fences, signalled after a
# 400 ms "render": it must pick linux-drm-syncobj-v1, see no frame presented
# before its fence signalled (--strict: the presentation event arrived before
# the signal), no protocol error, and get release points signalled.
#
# KWin: a pixel check too, through KWin's own screenshot interface
# (org.kde.KWin.ScreenShot2, kwin-shot.py as the client's --hook): while each
# frame's fence is pending its colour must not be on screen, and once the
# frame was presented it must be. mutter has no screenshot interface of its
# own (org.gnome.Shell.Screenshot is gnome-shell's): its pixels are not
# checked here.
#
# --control: the client gives its fence to nobody (--no-fence: implicit sync,
# nothing attached, what a client without syncbridge does) and renders 1 s:
# passes only if the peer then presented a frame before its fence (and, on
# KWin, its screenshot showed a frame's colour before its fence), i.e. the
# checks above can fail against this peer.
#
# --probe "CMD": first (before the client, if any) `syncbridge-info --json
# doctor` against the peer (CMD prints doctor's JSON; docs/inspect.md): it must
# find the peer's process by name, wp_linux_drm_syncobj_manager_v1, no
# zwp_linux_explicit_synchronization_v1 and zwp_linux_dmabuf_v1 v4 or later,
# as wayland-info listed them; every compositor path implicit fences leave
# unordered (lavapipe: out = no) must name linux-drm-syncobj-v1, and no verdict
# may advise syncbridge-wl-proxy (Weston, in weston-peer.sh, is the control).
# CMD may be doctor's probe driver (tests/doctor-probe: no verdicts, so only
# the Wayland facts are checked); both peers' tests run the whole doctor.
#
# --errors WL_PROTOCOL_ERRORS: instead of the client, the protocol-error
# cases of wl-protocol-errors against the peer (`--connect`): what the peer
# raises for each, printed next to what the XML says (docs/wayland.md's
# comparison table); fails only on an error for a legal sequence, the peer
# gone, or a case that could not run.
#
#   syncobj-peer.sh [--dri DRIVER] [--probe CMD] [--control | --errors BIN] kwin|mutter [CLIENT]
#
# --dri DRIVER: the peer sees only that driver's /dev/dri nodes
# (SYNCBRIDGE_TRIXIE_DRI): the device is then virtio_gpu whatever the
# listing order. KWin's virtual backend opens the first device libdrm lists
# (vgem, with no timeline syncobjs, would leave the global out); mutter adds
# every render node and selects a primary GPU (virtio_gpu's renderD129 in the
# guest). Measured 2026-12-06: without --dri both took virtio_gpu too.
#
# Root: SYNCBRIDGE_TRIXIE_ROOT, else the venus root (scripts/setup.sh).
# Exit: 0 the global is advertised (and the client passed), 1 not, 77 skip.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
intrixie=$here/scripts/vm/in-trixie.sh
dri='' control=0 hook='' errors= probe='' probe_fail=0
usage="usage: syncobj-peer.sh [--dri DRIVER] [--probe CMD] [--control | --errors BIN] kwin|mutter
       [CLIENT]"
while :; do
	case ${1:-} in
	--dri) dri=$2; shift 2 ;;
	--control) control=1; shift ;;
	--errors) errors=$2; shift 2 ;;
	--probe) probe=$2; shift 2 ;;
	*) break ;;
	esac
done
peer=${1:?$usage}
client=${2:-}
set --
[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: runs in the test guest"; exit 77; }
[ -e /dev/dri ] || { echo "SKIP: no /dev/dri"; exit 77; }
cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
root=${SYNCBRIDGE_TRIXIE_ROOT:-$cache/venus-root}
export SYNCBRIDGE_TRIXIE_ROOT=$root

sock=sbpeer
case $peer in
kwin)
	bin=/usr/bin/kwin_wayland pkg=kwin-wayland comm=kwin_wayland
	# ScreenShot2 serves only programs whose desktop file lists it, unless this.
	export KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1
	hook="/usr/bin/python3 $here/tests/wayland/kwin-shot.py"
	set -- /usr/bin/kwin_wayland --virtual --socket "$sock" --width 1024 --height 768 \
		--no-lockscreen --no-global-shortcuts -- "$@"
	# KWin's own categories at debug: the OpenGL backend, the DRM device.
	export QT_LOGGING_RULES='kwin_*.debug=true'
	;;
mutter)
	bin=/usr/bin/mutter pkg=mutter comm=mutter
	set -- /usr/bin/mutter --wayland --headless --no-x11 --virtual-monitor 1024x768 \
		--wayland-display "$sock" -- "$@"
	export MUTTER_DEBUG=wayland,render,backend GSETTINGS_BACKEND=memory
	;;
*) echo "$usage"; exit 2 ;;
esac
[ -x "$root$bin" ] || { echo "SKIP: $bin not in $root (scripts/setup.sh installs $pkg)"; exit 77; }
ver=$(awk -v p="$pkg" '$0 == "Package: " p {f=1} f && /^Version:/ {print $2; exit}' "$root/var/lib/dpkg/status")
echo "# $pkg $ver from $root${dri:+, /dev/dri: $dri only}"

peer_cmd=
while [ $# -gt 0 ] && [ "$1" != -- ]; do peer_cmd="$peer_cmd $1"; shift; done

# The runtime folder is bound into the root (in-trixie.sh binds /run/user/0;
# its /tmp is private).
mkdir -p /run/user/0
rt=$(mktemp -d /run/user/0/sbpeer-XXXXXX)
chmod 700 "$rt"
export XDG_RUNTIME_DIR=$rt
unset WAYLAND_DISPLAY DISPLAY
log=$rt/$peer.log
# shellcheck source=stop-group.sh
. "$(dirname "$0")/stop-group.sh"
. "$(dirname "$0")/peer-globals.sh"
cpid= bpid=
cleanup() {
	# The peer's process group (setsid below).
	[ -z "$cpid" ] || stop_group "$cpid"
	[ -z "$bpid" ] || { kill "$bpid"; wait "$bpid"; } 2>/dev/null
	echo "# $peer log (filtered, $(wc -l <"$log") lines):"
	grep -iE 'explicit sync|syncobj|drm|egl|opengl|gl_renderer|render|device|error|fail|warn|critical' "$log" |
		grep -v 'Sending\|Receiving\|Failed to load overview' | cut -c1-240 | head -n 40 | sed 's/^/#   /'
	rm -rf "$rt"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The peer's D-Bus session bus: this machine's dbus-daemon on a socket in
# the runtime folder, which both roots reach (the screenshot call comes from
# outside the Debian 13 root).
command -v dbus-daemon >/dev/null || { echo "SKIP: no dbus-daemon (scripts/setup.sh installs it)"; exit 77; }
export DBUS_SESSION_BUS_ADDRESS=unix:path=$rt/bus
dbus-daemon --session --nofork --nopidfile --address="$DBUS_SESSION_BUS_ADDRESS" &
bpid=$!
for _ in $(seq 1 100); do [ -S "$rt/bus" ] && break; sleep 0.1; done
[ -S "$rt/bus" ] || { echo "not ok - dbus-daemon did not start"; exit 1; }

t0=$(date +%s)
# A session of its own (setsid): the whole tree (unshare, chroot, the peer)
# ends with one kill of the group.
# shellcheck disable=SC2086
SYNCBRIDGE_TRIXIE_DRI=$dri setsid "$intrixie" $peer_cmd >"$log" 2>&1 &
cpid=$!
for _ in $(seq 1 1800); do
	[ -S "$rt/$sock" ] && break
	kill -0 "$cpid" 2>/dev/null || break
	sleep 0.1
done
[ -S "$rt/$sock" ] || { echo "not ok - $peer did not start (no socket after $(( $(date +%s) - t0 )) s)"; exit 1; }
echo "# $peer socket after $(( $(date +%s) - t0 )) s"

info=$rt/wayland-info.txt
# KWin makes its socket before its OpenGL backend is up, and adds
# zwp_linux_dmabuf_v1 and the syncobj global together when it is
# (AbstractEglBackend::initWayland -> WaylandServer::setRenderBackend);
# mutter has both before its socket. So: until zwp_linux_dmabuf_v1 is there
# (a bound of 120 s), then judge.
peer_globals "$info" "$sock" "$cpid" "$t0" 120 zwp_linux_dmabuf_v1
if grep -q "'wp_linux_drm_syncobj_manager_v1'" "$info"; then
	echo "ok - $peer advertises wp_linux_drm_syncobj_manager_v1"
else
	echo "not ok - $peer does not advertise wp_linux_drm_syncobj_manager_v1"
	grep -E 'Disabling explicit sync|syncobj|SyncObj' "$log" | sed 's/^/#   reason? /'
	exit 1
fi
if [ -n "$probe" ]; then
	# shellcheck disable=SC2086 # CMD is a command line
	WAYLAND_DISPLAY=$sock timeout 60 $probe >"$rt/doctor.json" 2>"$rt/doctor.err"
	echo "# doctor's probe: exit $?"
	sed 's/^/#   /' "$rt/doctor.err" "$rt/doctor.json"
	if /usr/bin/python3 "$here/tests/info/jsonq.py" --file "$rt/doctor.json" \
		'd["wayland"]["connected"]' "d['wayland']['compositor'] == '$comm'" \
		'd["wayland"]["syncobj_v1"] >= 1' 'd["wayland"]["explicit_v1"] == 0' \
		'd["wayland"]["dmabuf"] >= 4' \
		'"verdicts" not in d or len([v for v in d["verdicts"] if v["path"].endswith("-to-compositor") and v["ordered"] == "no"]) > 0' \
		'"verdicts" not in d or all("linux-drm-syncobj-v1" in v["by"] for v in [v for v in d["verdicts"] if v["path"].endswith("-to-compositor") and v["ordered"] == "no"])' \
		'"verdicts" not in d or not any("syncbridge-wl-proxy" in v["advice"] for v in d["verdicts"])'; then
		echo "ok - doctor: $peer offers linux-drm-syncobj-v1, and the unordered compositor paths say so (no proxy advised)"
	else
		echo "not ok - doctor's probe against $peer"
		probe_fail=1
	fi
	[ -n "$client" ] || [ -n "$errors" ] || exit $probe_fail
fi
if [ -n "$errors" ]; then
	out=$(timeout 150 "$errors" --connect "$sock" 2>&1)
	rc=$?
	echo "$out"
	n=$(echo "$out" | grep -c '^peer: .* the XML: ')
	[ "$rc" = 0 ] && echo "ok - the protocol-error cases ran against $peer ($n error cases measured)" ||
		echo "not ok - the protocol-error cases against $peer (exit $rc)"
	[ $probe_fail = 0 ] || exit 1
	exit $rc
fi
[ -n "$client" ] || exit 0
[ $probe_fail = 0 ] || exit 1 # the client's run would not change that

if [ $control = 1 ]; then
	out=$(WAYLAND_DISPLAY=$sock timeout 200 "$client" --frames 4 --render-ms 1000 --buffers virtio_gpu \
		--no-fence --expect implicit --strict ${hook:+--hook "$hook"} 2>&1)
	rc=$?
	echo "$out"
	if echo "$out" | grep -qE '[1-9][0-9]* presented before their fence'; then
		echo "ok - control: without the fence $peer presented frames before the signal (client exit $rc)"
		[ -z "$hook" ] && exit 0
		if echo "$out" | grep -qE '\([1-9][0-9]* frames on screen before their fence'; then
			echo "ok - control: $peer's screenshot showed a frame before its fence signalled"
			exit 0
		fi
		echo "not ok - control: no screenshot showed a frame early: the pixel check cannot fail here"
		exit 1
	fi
	echo "not ok - control: $peer presented no frame early without the fence (client exit $rc): the check cannot fail here"
	exit 1
fi
out=$(WAYLAND_DISPLAY=$sock timeout 200 "$client" --frames 5 --render-ms 400 --buffers virtio_gpu \
	--expect syncobj --strict --timing ${hook:+--hook "$hook"} 2>&1)
rc=$?
echo "$out"
fail=0
[ $rc = 0 ] && echo "ok - client against $peer: syncobj, no frame presented before its fence" ||
	{ echo "not ok - client against $peer (exit $rc)"; fail=1; }
echo "$out" | grep -qE 'releases: [1-9][0-9]* fenced' && echo "ok - release points signalled by $peer" ||
	{ echo "not ok - no signalled release point from $peer"; fail=1; }
echo "$out" | grep -q 'protocol error' && { echo "not ok - protocol error"; fail=1; }
if [ -n "$hook" ]; then
	echo "$out" | grep -qE 'pixel checks: [1-9][0-9]* passed, 0 failed' &&
		echo "ok - $peer's screenshots: no frame on screen before its fence, each one after" ||
		{ echo "not ok - $peer's screenshots (the pixel check lines above)"; fail=1; }
fi
exit $fail
