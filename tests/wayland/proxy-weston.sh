#!/bin/sh
# SPDX-License-Identifier: MIT
# syncbridge-wl-proxy in front of Weston 14 (bookworm-backports) headless, GL
# renderer, which has no linux-drm-syncobj-v1. syncbridge-wl-client through
# the proxy with --expect syncobj: its buffers are virtio_gpu dumb buffers
# that carry no implicit fence (the producer's vgem fence exists only in the
# timeline point — the driver case the field hits), so Weston has nothing to
# wait for but what the proxy holds back. Two runs, each on a fresh Weston:
#   1. the proxy: no frame presented before its point (--strict), fenced
#      releases, exit 0;
#   2. the control, the proxy with --no-wait: frames presented before their
#      point on the same Weston.
#
#   proxy-weston.sh PROXY CLIENT
set -u
proxy=$1 client=$2
wrap=${SYNCBRIDGE_VM_WRAPPER:-}
. "$(dirname "$0")/../../testbed/wayland/wait.sh"
. "$(dirname "$0")/../../testbed/wayland/weston.sh"
weston_dir sbwl-pxweston "error|Error"
# A Weston for each run: kiosk-shell 14.0.2 crashed (a general protection
# fault in kiosk-shell.so) when a second client connected after the first
# had left through the proxy (not tried without the proxy).
weston_start
fail=0
out=$(WAYLAND_DISPLAY=sbwl-weston $wrap "$proxy" --socket px -- "$client" --frames 5 \
	--render-ms 400 --buffers virtio_gpu --expect syncobj --strict 2>&1)
rc=$?
echo "$out" | sed 's/^/# proxy: /'
[ $rc = 0 ] && echo "ok - weston behind the proxy: every frame presented after its point" ||
	{ echo "not ok - weston behind the proxy (exit $rc)"; fail=1; }
echo "$out" | grep -qE 'releases: [1-9][0-9]* fenced' && echo "ok - fenced releases through the proxy" ||
	{ echo "not ok - no fenced release through the proxy"; fail=1; }
weston_start
out=$(WAYLAND_DISPLAY=sbwl-weston "$proxy" --socket px --no-wait -- "$client" --frames 4 \
	--render-ms 500 --buffers virtio_gpu --expect syncobj --strict 2>&1)
echo "$out" | sed 's/^/# control: /'
if echo "$out" | grep -qE ' [1-9][0-9]* presented before their fence'; then
	echo "ok - control: with --no-wait, weston presented frames before their point"
else
	echo "not ok - control: the race was not observed on weston"; fail=1
fi
[ $fail = 0 ] && echo "PASS" || echo "FAIL"
exit $fail
