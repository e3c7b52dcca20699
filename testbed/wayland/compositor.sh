# SPDX-License-Identifier: MIT
# Sourced by the scripts that run the example compositor
# (syncbridge-wl-compositor) for a client: tests/wayland/client-peer.sh,
# proxy-peer.sh (VM tier), proxy-drm-arg.sh (host).
#   compositor_dir NAME
#     A fresh XDG_RUNTIME_DIR (/tmp/NAME-XXXXXX, exported, in $rt), removed
#     at exit, with the compositor ($cpid, when it still runs) ended first.
#   compositor_start CMD...
#     Runs CMD (the compositor and its arguments, --ready-fd 3 among them:
#     fd 3 is $rt/ready) in the background as $cpid and waits, up to 60 s,
#     for it to write its socket's name there: under valgrind in the TCG
#     guest it starts in seconds, not ms. Bails out (exit 1) when it does
#     not.
#   compositor_stop
#     SIGTERM, and its exit status must be 0 (what it gives on SIGTERM): a
#     sanitizer's or memcheck's report (their leak checks run at that exit)
#     makes it another, and the test fails there (not ok, exit 1).
# Needs wait.sh (wait_alive) sourced first.
compositor_dir() {
	rt=$(mktemp -d "/tmp/$1-XXXXXX")
	export XDG_RUNTIME_DIR=$rt
	cpid=
	trap '[ -n "$cpid" ] && kill $cpid 2>/dev/null; rm -rf "$rt"' EXIT
}

compositor_start() {
	exec 3>"$rt/ready"
	"$@" &
	cpid=$!
	exec 3>&-
	wait_alive "$cpid" 600 test -s "$rt/ready" ||
		{ echo "Bail out! the compositor did not start"; exit 1; }
}

compositor_stop() {
	kill -TERM "$cpid" 2>/dev/null
	wait "$cpid"
	_crc=$?
	cpid=
	[ $_crc = 0 ] && return 0
	echo "not ok - the compositor exited with status $_crc" \
		"(a sanitizer or memcheck report above?)"
	exit 1
}
