# SPDX-License-Identifier: MIT
# Sourced by the PipeWire test scripts: a daemon of their own and manual links.
#
#   pw_args USAGE ARGS...    --control and --frames N (default 20): $control, $frames
#   pw_require [CMD...]      SKIP (exit 77) without pipewire, pw-link, CMD or /dev/dri
#   pw_setup NAME            a runtime directory ($rt) and the cleanup trap
#   pw_start_daemon          Debian's pipewire, default configuration, in $rt
#   pw_link OUT_NODE IN_NODE link the first output port of OUT_NODE to the
#                            first input port of IN_NODE, as a user would
#                            without a session manager (pw-link)
#   pw_spawn CMD...          run CMD in the background, killed at exit
#   pw_wait_exit PID SECONDS 0 once PID exited (its status in $st), 1 if it
#                            still runs after SECONDS by the clock
#   pw_dump_logs FILE...     the logs, and whether the producer still runs
#   pw_control_verdict BAD N WHAT
#                            with --control: "ok" and exit 0 when BAD of the
#                            N frames were read before their writes finished
#                            (the failure the bridge prevents), else "not ok"
#                            and exit 1; WHAT names those frames (torn,
#                            stale). Without --control it returns
#   pw_check OK NOT_OK TEST...
#                            "ok - OK" when TEST (test(1) arguments) holds,
#                            else "not ok - NOT_OK" and rc=1
pids=
pw_args() {
	usage=$1
	shift
	control= frames=20
	while [ $# -gt 0 ]; do
		case $1 in
		--control) control=1 ;;
		--frames) frames=$2; shift ;;
		*) echo "usage: $usage" >&2; exit 2 ;;
		esac
		shift
	done
}
pw_require() {
	for c in pipewire pw-link "$@"; do
		command -v "$c" >/dev/null || { echo "SKIP: $c is not installed (scripts/setup.sh installs it)"; exit 77; }
	done
	[ -e /dev/dri ] || { echo "SKIP: no /dev/dri (vgem and virtio_gpu make the buffers and timelines)"; exit 77; }
}
pw_setup() {
	rt=$(mktemp -d "/tmp/$1-XXXXXX")
	chmod 700 "$rt"
	export XDG_RUNTIME_DIR=$rt PIPEWIRE_RUNTIME_DIR=$rt
	unset PIPEWIRE_REMOTE
	trap 'for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$rt"' EXIT
}
pw_spawn() {
	"$@" &
	pids="$pids $!"
}
pw_start_daemon() {
	pw_spawn sh -c 'exec pipewire >"$0/daemon.log" 2>&1' "$rt"
	for _ in $(seq 1 100); do [ -S "$rt/pipewire-0" ] && return 0; sleep 0.1; done
	echo "Bail out! the daemon did not start"
	cat "$rt/daemon.log"
	exit 1
}
pw_link() {
	out= in=
	for _ in $(seq 1 150); do
		out=$(pw-link -o 2>/dev/null | grep -m1 "^$1:")
		in=$(pw-link -i 2>/dev/null | grep -m1 "^$2:")
		[ -n "$out" ] && [ -n "$in" ] && break
		sleep 0.1
	done
	if [ -z "$out" ] || [ -z "$in" ]; then
		echo "Bail out! the ports of $1 / $2 did not appear"
		pw-link -o; pw-link -i
		return 1
	fi
	pw-link "$out" "$in" || { echo "Bail out! pw-link $out $in failed"; return 1; }
	echo "# linked $out -> $in"
}
pw_wait_exit() {
	end=$(($(date +%s) + $2))
	while kill -0 "$1" 2>/dev/null; do
		[ "$(date +%s)" -lt $end ] || return 1
		sleep 0.2
	done
	wait "$1"
	st=$?
	return 0
}
pw_dump_logs() {
	for f in "$@"; do
		echo "# --- $f"
		sed 's/^/# /' "$f"
	done
}
pw_control_verdict() {
	[ -n "$control" ] || return 0
	if [ "$1" -gt 0 ]; then
		echo "ok - control: without the bridge $1 of $2 frames ($3) were read before their writes finished"
		exit 0
	fi
	echo "not ok - control: no $3 frame seen ($2 frames)"
	exit 1
}
pw_check() {
	ok=$1 not_ok=$2
	shift 2
	if [ "$@" ]; then
		echo "ok - $ok"
	else
		echo "not ok - $not_ok"
		rc=1
	fi
}
