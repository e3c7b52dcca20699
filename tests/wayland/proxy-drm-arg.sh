#!/bin/sh
# SPDX-License-Identifier: MIT
# syncbridge-wl-proxy --drm PATH with a device that cannot be opened, in front
# of a compositor without linux-drm-syncobj-v1 (where the proxy would use
# it): exit 1 with the path and the reason on stderr, the client never run.
# Control: --drm none, the same compositor, runs the client (`true`) and
# exits with its status, 0.
#
#   proxy-drm-arg.sh COMPOSITOR PROXY
set -u
comp=$1 proxy=$2
unset WAYLAND_DISPLAY
. "$(dirname "$0")/../../testbed/wayland/wait.sh"
. "$(dirname "$0")/../../testbed/wayland/compositor.sh"
compositor_dir sbwl-pxdrm
compositor_start "$comp" --socket comp --ready-fd 3 --no-drm-syncobj --renderer none \
	2>"$rt/comp.log"
fail=0
missing=/nonexistent/renderD199
WAYLAND_DISPLAY=comp timeout 30 "$proxy" --drm "$missing" -- sh -c ': >"$XDG_RUNTIME_DIR/ran"' \
	>"$rt/out" 2>"$rt/err"
rc=$?
sed 's/^/# stderr: /' "$rt/err"
if [ $rc = 1 ] && grep -q -- "--drm $missing: No such file or directory" "$rt/err" && [ ! -e "$rt/ran" ]; then
	echo "ok - --drm with a missing device: exit 1, the path and the reason said, the client not run"
else
	echo "not ok - --drm with a missing device: exit $rc, client run: $([ -e "$rt/ran" ] && echo yes || echo no)"
	fail=1
fi
WAYLAND_DISPLAY=comp timeout 30 "$proxy" --drm none -- true >"$rt/out" 2>"$rt/err"
rc=$?
[ $rc = 0 ] && echo "ok - control: --drm none runs the client, exit 0" ||
	{ echo "not ok - control: --drm none: exit $rc"; sed 's/^/# /' "$rt/err"; fail=1; }
compositor_stop
exit $fail
