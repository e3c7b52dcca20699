#!/bin/sh
# SPDX-License-Identifier: MIT
# An X11 GL client through Xwayland, for stock_client.py: Xwayland rootful
# (its root window is one xdg_toplevel on the compositor, WAYLAND_DISPLAY)
# and glxgears drawing in it for SECONDS. Exit 0 when both ran; 77 when
# either is not installed.
#   xwayland-glxgears.sh [SECONDS]
secs=${1:-12}
command -v Xwayland >/dev/null && command -v glxgears >/dev/null || {
	echo "SKIP: Xwayland or glxgears (mesa-utils) is not installed"; exit 77; }
# a display number nobody uses in this guest/host
d=5
while [ -e /tmp/.X11-unix/X$d ] || [ -e /tmp/.X$d-lock ]; do d=$((d + 1)); done
Xwayland :$d -noreset &
x=$!
trap 'kill $x 2>/dev/null' EXIT INT TERM
i=0
while [ ! -e /tmp/.X11-unix/X$d ]; do
	i=$((i + 1))
	[ $i -le 300 ] || { echo "xwayland-glxgears: Xwayland :$d did not start in 30 s"; exit 1; }
	kill -0 $x 2>/dev/null || { echo "xwayland-glxgears: Xwayland exited"; exit 1; }
	sleep 0.1
done
DISPLAY=:$d timeout -s INT "$secs" glxgears
rc=$?
# glxgears has no SIGINT handler: 124 is timeout's "it ran its time"
[ $rc = 124 ] || [ $rc = 130 ] || { echo "xwayland-glxgears: glxgears exited $rc"; exit 1; }
kill -0 $x 2>/dev/null || { echo "xwayland-glxgears: Xwayland died while glxgears ran"; exit 1; }
kill $x; wait $x
exit 0
