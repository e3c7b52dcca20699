# SPDX-License-Identifier: MIT
# Sourced by the VM-tier scripts that run Weston 14 (bookworm-backports) for
# a client: tests/wayland/weston-peer.sh, proxy-weston.sh.
#   weston_dir NAME PATTERN
#     Skips (exit 77) where weston is not installed or there is no
#     /dev/dri. A fresh XDG_RUNTIME_DIR (/tmp/NAME-XXXXXX, mode 700,
#     exported, in $rt) with Weston's log at $log; at exit Weston is ended,
#     the log's lines that match PATTERN (grep -E) are printed as comments
#     and the folder is removed.
#   weston_start
#     Starts it (a fresh one: the last one ended first) headless with the
#     GL renderer and the kiosk shell on socket sbwl-weston, and waits, up
#     to 90 s, for the socket and the GL renderer's first lines in the log
#     (before them a client finds no linux-dmabuf; under TCG the GL start
#     takes seconds). Sets wpid. Bails out (exit 1) when no socket came;
#     says how long it took.
# Needs wait.sh (wait_alive) sourced first.
weston_dir() {
	command -v weston >/dev/null || {
		echo "SKIP: weston not installed" \
			"(scripts/setup.sh installs it from bookworm-backports)"
		exit 77
	}
	[ -e /dev/dri ] || { echo "SKIP: no /dev/dri"; exit 77; }
	rt=$(mktemp -d "/tmp/$1-XXXXXX")
	chmod 700 "$rt"
	export XDG_RUNTIME_DIR=$rt
	log=$rt/weston.log wpid= _weston_log_lines=$2
	trap weston_exit EXIT
}

weston_stop() {
	[ -n "$wpid" ] && { kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; }
	wpid=
}

weston_exit() {
	weston_stop
	echo "# weston log:"
	grep -E "$_weston_log_lines" "$log" | sed "s/^/#   /"
	rm -rf "$rt"
}

# The socket, and the GL renderer's first lines in the log.
weston_up() {
	[ -S "$rt/sbwl-weston" ] && grep -q "explicit sync\|Using GL renderer" "$log" 2>/dev/null
}

weston_start() {
	weston_stop
	rm -f "$rt/sbwl-weston" "$rt/sbwl-weston.lock" "$log"
	_t0=$(date +%s)
	weston --backend=headless --renderer=gl --shell=kiosk --socket=sbwl-weston --idle-time=0 \
		--log="$log" 2>/dev/null &
	wpid=$!
	wait_alive "$wpid" 900 weston_up
	[ -S "$rt/sbwl-weston" ] || { echo "Bail out! weston did not start"; exit 1; }
	echo "# weston up after $(( $(date +%s) - _t0 )) s"
}
