#!/bin/sh
# SPDX-License-Identifier: MIT
# An X11 GL client through Xwayland, for stock_client.py: Xwayland rootful
# (its root window is one xdg_toplevel on the compositor, WAYLAND_DISPLAY)
# and glxgears drawing in it for SECONDS. Exit 0 when both ran; 77 when
# either is not installed.
#   xwayland-glxgears.sh [--trixie] [SECONDS]
#
# --trixie: Xwayland 24.1 from the Debian 13 root (scripts/vm/in-trixie.sh,
# test guest only), which has linux-drm-syncobj-v1 (Debian 12's 22.1 has
# not), run with -verbose 3 so that its glamor lines are in the log; glxgears
# stays the host's. The root has its own /tmp: the X socket file is there,
# and glxgears reaches Xwayland through its abstract socket
# (@/tmp/.X11-unix/XN, one namespace for both sides). Xwayland's output
# (WAYLAND_DEBUG included) is printed when it has ended, then its glamor and
# syncobj lines again at the end (stock_client.py shows the last lines).
trixie=0
if [ "${1:-}" = --trixie ]; then trixie=1; shift; fi
secs=${1:-12}
here=$(cd "$(dirname "$0")/../.." && pwd)
command -v glxgears >/dev/null || { echo "SKIP: glxgears (mesa-utils) is not installed"; exit 77; }
if [ $trixie = 1 ]; then
	[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: --trixie runs in the test guest"; exit 77; }
	cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
	root=${SYNCBRIDGE_TRIXIE_ROOT:-$cache/venus-root}
	[ -x "$root/usr/bin/Xwayland" ] ||
		{ echo "SKIP: no Xwayland in $root (scripts/setup.sh makes the Debian 13 root)"; exit 77; }
	ver=$(awk '$0 == "Package: xwayland" {f=1} f && /^Version:/ {print $2; exit}' "$root/var/lib/dpkg/status")
	echo "# xwayland $ver from $root"
else
	command -v Xwayland >/dev/null || { echo "SKIP: Xwayland is not installed"; exit 77; }
fi
# A display number nobody uses in this guest/host: no lock file, no socket
# file, no abstract socket (a Debian 13 Xwayland's files are in its root).
d=5
while [ -e /tmp/.X11-unix/X$d ] || [ -e /tmp/.X$d-lock ] ||
	grep -q "@/tmp/.X11-unix/X$d\$" /proc/net/unix; do
	d=$((d + 1))
done
log=${XDG_RUNTIME_DIR:-/tmp}/xwayland-$d.log
# shellcheck source=stop-group.sh
. "$(dirname "$0")/stop-group.sh"
x=
# shellcheck disable=SC2317 # run by the EXIT trap
finish() {
	# Xwayland's process group (setsid below): unshare, chroot and Xwayland
	# end together.
	if [ -n "$x" ]; then
		stop_group "$x"
		x=
	fi
	if [ -f "$log" ]; then
		cat "$log"
		echo "# Xwayland's own lines (glamor, syncobj, errors):"
		grep -v '^\[' "$log" | grep -iE 'glamor|syncobj|explicit|dri3|egl|gbm|error|fail' |
			cut -c1-200 | head -n 20 | sed 's/^/#   /'
		rm -f "$log"
	fi
}
trap finish EXIT
trap 'exit 1' INT TERM
if [ $trixie = 1 ]; then
	setsid "$here/scripts/vm/in-trixie.sh" /usr/bin/Xwayland ":$d" -noreset -verbose 3 >"$log" 2>&1 &
else
	setsid Xwayland ":$d" -noreset >"$log" 2>&1 &
fi
x=$!
t0=$(date +%s)
i=0
until grep -q "@/tmp/.X11-unix/X$d\$" /proc/net/unix; do
	i=$((i + 1))
	[ $i -le 600 ] || { echo "xwayland-glxgears: Xwayland :$d did not start in 60 s"; exit 1; }
	kill -0 $x 2>/dev/null || { echo "xwayland-glxgears: Xwayland exited"; exit 1; }
	sleep 0.1
done
echo "# Xwayland :$d listening after $(( $(date +%s) - t0 )) s"
DISPLAY=:$d timeout -s INT "$secs" glxgears
rc=$?
# glxgears has no SIGINT handler: 124 is timeout's "it ran its time"
[ $rc = 124 ] || [ $rc = 130 ] || { echo "xwayland-glxgears: glxgears exited $rc"; exit 1; }
kill -0 $x 2>/dev/null || { echo "xwayland-glxgears: Xwayland died while glxgears ran"; exit 1; }
exit 0
