#!/bin/sh
# SPDX-License-Identifier: MIT
# The real peer: the client helper against Weston 14 (bookworm-backports)
# headless with the GL renderer. Weston advertises
# zwp_linux_explicit_synchronization_v1 only when its GL renderer has
# EGL_ANDROID_native_fence_sync (it logs "explicit sync: yes"), which Mesa 25
# gives in the test guest; it has no linux-drm-syncobj-v1, so the helper must
# pick explicit-sync v1. Buffers are virtio_gpu dumb buffers (Weston's EGL
# display sits on virtio_gpu there and cannot import vgem's); the acquire
# fences are pending vgem fences. No frame may be presented before its fence
# signalled (the client dispatches while it renders: a wp_presentation
# presented event received before the signal fails; Weston's timestamps are
# printed, not judged, docs/wayland.md), with no protocol error, and fenced
# releases must come back.
# Afterwards, for the record (not asserted): the same client with explicit sync
# off (implicit fallback) — whether Weston + llvmpipe honour dma-buf fences.
#
#   weston-peer.sh [--probe "CMD"] CLIENT
#
# --probe: first, `syncbridge-info --json doctor` against Weston (CMD prints
# doctor's JSON; docs/inspect.md): it must name the process weston and find
# zwp_linux_explicit_synchronization_v1, zwp_linux_dmabuf_v1 and no
# wp_linux_drm_syncobj_manager_v1 (Weston 14 has none); every compositor path
# implicit fences leave unordered (lavapipe and llvmpipe: out = no) must name
# explicit-sync v1 and advise syncbridge-wl-proxy. KWin and mutter
# (syncobj-peer.sh) are its control: there no verdict advises the proxy.
#
# Under the valgrind test setup the guest batch wraps only this script: the
# asserted client run is started under SYNCBRIDGE_VM_WRAPPER (weston is not
# ours; the implicit run for the record is not).
set -u
probe='' probe_fail=0
[ "$1" = --probe ] && { probe=$2; shift 2; }
client=$1
wrap=${SYNCBRIDGE_VM_WRAPPER:-}
. "$(dirname "$0")/../../testbed/wayland/wait.sh"
. "$(dirname "$0")/../../testbed/wayland/weston.sh"
weston_dir sbwl-weston "explicit sync|GL renderer|EGL_ANDROID|error|Error"
weston_start
# Weston logs the renderer's features once the GL renderer is up: wait for
# that line (up to 10 s; it only decides the note below, the client checks
# the protocol itself) rather than sleep and hope.
for _ in $(seq 1 100); do
	grep -q "explicit sync:" "$log" 2>/dev/null && break
	sleep 0.1
done
if grep -q "explicit sync: yes" "$log"; then
	echo "ok - weston: explicit sync: yes (GL renderer with native fence sync)"
else
	echo "# weston does not advertise explicit sync here:"; grep -iE "explicit sync|fence" "$log" | sed 's/^/#   /'
fi
if [ -n "$probe" ]; then
	# shellcheck disable=SC2086 # CMD is a command line
	WAYLAND_DISPLAY=sbwl-weston timeout 60 $probe >"$rt/doctor.json" 2>"$rt/doctor.err"
	echo "# doctor's probe: exit $?"
	sed 's/^/#   /' "$rt/doctor.err" "$rt/doctor.json"
	if python3 "$(dirname "$0")/../info/jsonq.py" --file "$rt/doctor.json" \
		'd["wayland"]["connected"]' 'd["wayland"]["compositor"] == "weston"' \
		'd["wayland"]["syncobj_v1"] == 0' 'd["wayland"]["explicit_v1"] >= 1' \
		'd["wayland"]["dmabuf"] >= 3' \
		'len([v for v in d["verdicts"] if v["path"].endswith("-to-compositor") and v["ordered"] == "no"]) > 0' \
		'all("zwp_linux_explicit_synchronization_v1" in v["by"] and "syncbridge-wl-proxy" in v["advice"] for v in [v for v in d["verdicts"] if v["path"].endswith("-to-compositor") and v["ordered"] == "no"])'; then
		echo "ok - doctor: weston, explicit-sync v1, no syncobj; the unordered compositor paths name v1 and advise syncbridge-wl-proxy"
	else
		echo "not ok - doctor's probe against weston"
		probe_fail=1
	fi
fi
out=$(WAYLAND_DISPLAY=sbwl-weston $wrap "$client" --frames 5 --render-ms 50 --buffers virtio_gpu --expect v1 --strict 2>&1)
rc=$?
echo "$out"
fail=$probe_fail
[ $rc = 0 ] || { echo "not ok - client helper against weston (exit $rc)"; fail=1; }
echo "$out" | grep -qE 'releases: [1-9][0-9]* fenced' && echo "ok - fenced releases from weston" ||
	{ echo "not ok - no fenced release from weston"; fail=1; }
# For the record: implicit fallback against the same weston.
out=$(WAYLAND_DISPLAY=sbwl-weston "$client" --frames 3 --render-ms 50 --buffers virtio_gpu --no-explicit-v1 --expect implicit 2>&1)
echo "$out" | grep -E "presented" | sed "s/^/# implicit fallback (not asserted): /"
[ $fail = 0 ] && echo "PASS" || echo "FAIL"
exit $fail
