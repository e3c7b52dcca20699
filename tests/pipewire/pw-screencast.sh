#!/bin/sh
# SPDX-License-Identifier: MIT
# mutter's screencast, consumed through libsyncbridge-pipewire (issue 35,
# item 4; docs/syncobj-peers.md). In the GPU (virgl) guest:
#   - Debian's PipeWire daemon (1.4) in a runtime folder of its own, and a
#     D-Bus session bus (dbus-daemon) both roots reach through that folder;
#   - mutter 48.7 from the Debian 13 root (scripts/vm/in-trixie.sh),
#     `--headless --virtual-monitor 1024x768`, on that bus and that daemon;
#   - syncbridge-wl-client drawing frames on it (the damage that makes
#     mutter send screencast frames);
#   - mutter-screencast.py: CreateSession, RecordMonitor (the primary
#     monitor), Start, the stream's PipeWire node;
#   - pw-screencast: our consumer of that node.
#
#   pw-screencast.sh PW_SCREENCAST CLIENT [--peer kwin KWIN_SCREENCAST]
#                    [--control|--never-release] [--frames N]
#   pw-screencast.sh PW_SCREENCAST CLIENT [--peer kwin KWIN_SCREENCAST] --pixels [--control]
#
# --peer kwin: KWin 6.3.6 (`kwin_wayland --virtual`) instead of mutter, its
# screencast started by kwin-screencast (zkde_screencast_unstable_v1, a
# restricted global: KWIN_WAYLAND_NO_PERMISSION_CHECKS=1) with its plugin
# from kwin-common (scripts/setup.sh); the same checks.
#
# Passes when the consumer got N frames, mutter's buffers carried explicit
# sync (SPA_META_SyncTimeline with two SyncObj planes: mutter offers it
# where its render node has timeline syncobjs, and our params take it), the
# consumer waited for every acquire point and signalled every release point,
# and frames kept coming past the buffer count (mutter reuses a buffer only
# after its release point). --control: SYNCBRIDGE_DISABLE=1 for the consumer
# (only the plain Buffers param offered): passes when mutter then sends
# buffers without explicit sync, i.e. the check above can fail.
# --never-release: the consumer takes each acquire point (promising a
# release) and never signals the release point: passes when mutter then
# stops after at most the buffer count of frames, i.e. it waits for the
# release points the normal run signals.
#
# --pixels: item 2's pixel check for mutter, which has no screenshot
# interface of its own: the consumer reads every frame back (--dump, an EGL
# import) and syncbridge-wl-client, drawing on mutter with linux-drm-syncobj
# acquire points on pending vgem fences, asks screencast-shot.py (its
# --hook) whether its frame is on screen while the fence is pending (it
# must not be) and after it was presented (it must be). With --control the
# client gives its fence to nobody (--no-fence): passes when a frame then
# was on screen before its fence, i.e. the check can fail.
set -u
sc_bin=$1 client=$2
shift 2
never= pixels= peer=mutter kwin_sc=
if [ "${1:-}" = --peer ]; then
	peer=$2 kwin_sc=${3:-}
	shift 3 || { echo "usage: ... --peer kwin KWIN_SCREENCAST"; exit 2; }
fi
case ${1:-} in
--never-release) never=1; shift ;;
--pixels) pixels=1; shift ;;
esac
. "$(dirname "$0")/pw-common.sh"
pw_args "pw-screencast.sh PW_SCREENCAST CLIENT [--control|--never-release] [--frames N]" "$@"
pw_require dbus-daemon
[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: runs in the test guest"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
intrixie=$here/scripts/vm/in-trixie.sh
cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
root=${SYNCBRIDGE_TRIXIE_ROOT:-$cache/venus-root}
export SYNCBRIDGE_TRIXIE_ROOT=$root
case $peer in
mutter) pkg=mutter bin=/usr/bin/mutter ;;
kwin)
	pkg=kwin-wayland bin=/usr/bin/kwin_wayland
	[ -x "$kwin_sc" ] || { echo "SKIP: no kwin-screencast (plasma-wayland-protocols at build time)"; exit 77; }
	[ -e "$root/usr/lib/x86_64-linux-gnu/qt6/plugins/kwin/plugins/screencast.so" ] ||
		{ echo "SKIP: no KWin screencast plugin in $root (scripts/setup.sh adds it)"; exit 77; }
	;;
*) echo "pw-screencast.sh: --peer mutter|kwin"; exit 2 ;;
esac
[ -x "$root$bin" ] || { echo "SKIP: no $bin in $root (scripts/setup.sh installs $pkg)"; exit 77; }
[ -d "$root/usr/lib/x86_64-linux-gnu/pipewire-0.3" ] ||
	{ echo "SKIP: no PipeWire modules in $root (scripts/setup.sh installs libpipewire-0.3-modules)"; exit 77; }
ver=$(awk -v p="$pkg" '$0 == "Package: " p {f=1} f && /^Version:/ {print $2; exit}' "$root/var/lib/dpkg/status")
echo "# $pkg $ver from $root"

pw_setup sb-sc
# shellcheck source=../wayland/stop-group.sh
. "$(dirname "$0")/../wayland/stop-group.sh"
mpid=
stop_peer() {
	[ -z "$mpid" ] || stop_group "$mpid"
	mpid=
}
trap 'stop_peer; for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$rt"' EXIT
pw_start_daemon
# The peer's libpipewire reads client.conf; the root's PipeWire has none
# (pipewire-bin's), so it gets this machine's (the same 1.4).
mkdir -p "$rt/pwconf"
cp /usr/share/pipewire/client.conf "$rt/pwconf/"
bus=unix:path=$rt/bus
pw_spawn dbus-daemon --session --nofork --nopidfile --address="$bus"
for _ in $(seq 1 100); do [ -S "$rt/bus" ] && break; sleep 0.1; done
[ -S "$rt/bus" ] || { echo "Bail out! dbus-daemon did not start"; exit 1; }

sock=sbsc
t0=$(date +%s)
# A session of its own (setsid): the whole tree ends with one kill of the group.
if [ "$peer" = mutter ]; then
	DBUS_SESSION_BUS_ADDRESS=$bus PIPEWIRE_CONFIG_DIR=$rt/pwconf GSETTINGS_BACKEND=memory \
		MUTTER_DEBUG=screen-cast SYNCBRIDGE_TRIXIE_DRI=virtio_gpu \
		setsid "$intrixie" /usr/bin/mutter --wayland --headless --no-x11 --virtual-monitor 1024x768 \
		--wayland-display "$sock" >"$rt/$peer.log" 2>&1 &
else
	# zkde_screencast_unstable_v1 is restricted: offered to any client only so.
	DBUS_SESSION_BUS_ADDRESS=$bus PIPEWIRE_CONFIG_DIR=$rt/pwconf KWIN_WAYLAND_NO_PERMISSION_CHECKS=1 \
		QT_LOGGING_RULES='kwin_screencast*.debug=true' SYNCBRIDGE_TRIXIE_DRI=virtio_gpu \
		setsid "$intrixie" /usr/bin/kwin_wayland --virtual --socket "$sock" --width 1024 --height 768 \
		--no-lockscreen --no-global-shortcuts >"$rt/$peer.log" 2>&1 &
fi
mpid=$!
dump() {
	echo "# $peer log (filtered, $(wc -l <"$rt/$peer.log") lines):"
	grep -iE 'screen.?cast|pipewire|sync|error|fail|warn|critical' "$rt/$peer.log" |
		grep -v 'Failed to load overview' | cut -c1-240 | head -n 40 | sed 's/^/#   /'
}
for _ in $(seq 1 1800); do
	[ -S "$rt/$sock" ] && break
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
[ -S "$rt/$sock" ] || { echo "not ok - $peer did not start ($(( $(date +%s) - t0 )) s)"; dump; exit 1; }
echo "# $peer socket after $(( $(date +%s) - t0 )) s"

# Damage for the screencast: frames on virtio_gpu buffers, 5 per second
# (--pixels: the checking client below draws instead).
if [ -z "$pixels" ]; then
	WAYLAND_DISPLAY=$sock "$client" --frames 100000 --render-ms 200 --buffers virtio_gpu \
		>"$rt/client.log" 2>&1 &
	pids="$pids $!"
fi

start_cast() {
	if [ "$peer" = mutter ]; then
		/usr/bin/python3 "$(dirname "$0")/mutter-screencast.py" "$bus" >"$rt/sc.out" 2>"$rt/sc.err" &
	else
		WAYLAND_DISPLAY=$sock "$kwin_sc" >"$rt/sc.out" 2>"$rt/sc.err" &
	fi
	scpid=$!
	pids="$pids $scpid"
}
start_cast
node= tries=1
for _ in $(seq 1 1800); do
	node=$(sed -n 's/^node=//p' "$rt/sc.out")
	[ -n "$node" ] && break
	if ! kill -0 "$scpid" 2>/dev/null; then
		# KWin adds its globals with its OpenGL backend, after the socket:
		# kwin-screencast says 77 ("no such global") until then.
		wait "$scpid"
		[ $? = 77 ] && [ "$peer" = kwin ] && [ $tries -lt 60 ] || break
		tries=$((tries + 1))
		sleep 1
		start_cast
	fi
	sleep 0.1
done
[ -n "$node" ] || { echo "not ok - no screencast stream from $peer: $(cat "$rt/sc.err")"; dump; exit 1; }
echo "# $peer's screencast: PipeWire node $node, $(( $(date +%s) - t0 )) s after its start (try $tries)"
# The node's name, for pw-link (mutter's is "mutter").
name=$(pw-cli info "$node" 2>/dev/null | sed -n 's/.*node\.name = "\(.*\)".*/\1/p' | head -n 1)
[ -n "$name" ] || name=$peer

env=
[ -n "$control" ] && [ -z "$pixels" ] && env=SYNCBRIDGE_DISABLE=1
scargs="--seconds 120"
[ -z "$never" ] || scargs="--seconds 15 --never-release"
[ -z "$pixels" ] || { frames=100000 scargs="--seconds 150 --dump $rt/frame.rgba"; }
# shellcheck disable=SC2086
env $env "$sc_bin" --target "$node" --frames "$frames" $scargs >"$rt/consumer.log" 2>&1 &
cpid=$!
pids="$pids $cpid"
# No session manager: link the peer's stream to ours as a user would.
pw_link "$name" sb-screencast || { cat "$rt/consumer.log"; dump; exit 1; }
if [ -n "$pixels" ]; then
	# The consumer's first frame (the peer casts its monitor at the start).
	for _ in $(seq 1 300); do [ -e "$rt/frame.rgba" ] && break; sleep 0.1; done
	[ -e "$rt/frame.rgba" ] || { echo "not ok - no screencast frame read back"; cat "$rt/consumer.log"; dump; exit 1; }
	shot="/usr/bin/python3 $(cd "$(dirname "$0")" && pwd)/screencast-shot.py $rt/frame.rgba"
	if [ -n "$control" ]; then
		cargs="--frames 4 --render-ms 1000 --no-fence --expect implicit"
	else
		cargs="--frames 5 --render-ms 400 --expect syncobj"
	fi
	# shellcheck disable=SC2086
	out=$(WAYLAND_DISPLAY=$sock timeout 200 "$client" --buffers virtio_gpu --strict $cargs --hook "$shot" 2>&1)
	crc=$?
	echo "$out"
	kill -TERM $cpid 2>/dev/null
	pw_wait_exit $cpid 20 >/dev/null
	sed 's/^/# consumer: /' "$rt/consumer.log" | grep -v '^# consumer: # buffer'
	dump
	stop_peer
	if [ -n "$control" ]; then
		if echo "$out" | grep -qE '\([1-9][0-9]* frames on screen before their fence'; then
			echo "ok - control: without the fence $peer's screencast showed a frame before its fence signalled"
			exit 0
		fi
		echo "not ok - control: no frame on $peer's screencast before its fence: the pixel check cannot fail here"
		exit 1
	fi
	rc=0
	pw_check "the client exited 0" "the client exited $crc" "$crc" = 0
	echo "$out" | grep -qE 'pixel checks: ([8-9]|[1-9][0-9]+) passed, 0 failed' &&
		echo "ok - $peer's screencast: no frame on screen before its fence, each one after" ||
		{ echo "not ok - $peer's screencast pixel checks (the lines above)"; rc=1; }
	exit $rc
fi
if ! pw_wait_exit $cpid 150; then
	echo "not ok - the consumer did not finish in 150 s"
	cat "$rt/consumer.log"; dump; exit 1
fi
crc=$st
sed 's/^/# consumer: /' "$rt/consumer.log"
line=$(grep '^frames=' "$rt/consumer.log")
val() { echo "$line" | sed -n "s/.*$1=\([0-9]*\).*/\1/p"; }
got=$(val frames) synced=$(val synced) pending=$(val pending) buffers=$(val buffers)
: "${got:=0}" "${synced:=0}" "${pending:=0}" "${buffers:=0}"
dump
stop_peer
if [ -n "$never" ]; then
	if [ "$synced" -gt 0 ] && [ "$got" -le "$buffers" ]; then
		echo "ok - never-release: $peer stopped after $got frames on its $buffers buffers (it waits for the release points)"
		exit 0
	fi
	echo "not ok - never-release: $got frames ($synced with explicit sync) on $buffers buffers without a release point signalled"
	exit 1
fi
if [ -n "$control" ]; then
	if [ "$got" -gt 0 ] && [ "$synced" = 0 ]; then
		echo "ok - control: with the bridge off $peer sent $got frames without explicit sync"
		exit 0
	fi
	echo "not ok - control: $synced of $got frames with explicit sync (exit $crc)"
	exit 1
fi
rc=0
pw_check "the consumer exited 0" "the consumer exited $crc" "$crc" = 0
pw_check "$got frames" "$got of $frames frames" "$got" -ge "$frames"
pw_check "explicit sync negotiated: $synced of $got frames on buffers with SPA_META_SyncTimeline" \
	"$synced of $got frames with explicit sync" "$synced" = "$got" -a "$got" -gt 0
pw_check "frames kept coming past the $buffers buffers ($peer reused them after their release points)" \
	"$got frames on $buffers buffers" "$got" -gt "$buffers"
echo "# $pending acquire points were still pending when their frame came"
exit $rc
