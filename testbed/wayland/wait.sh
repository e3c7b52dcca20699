# SPDX-License-Identifier: MIT
# Sourced by the scripts that start a compositor and wait for what it makes
# (compositor.sh, weston.sh).
#   wait_alive PID TENTHS TEST...
#     Runs TEST (a command: `test -S SOCKET`, a function) every 0.1 s until
#     it succeeds, PID has gone, or TENTHS tries were made: the bound is a
#     hang guard, never a sleep that hopes. Returns TEST's last status, so
#     0 when what it looks for came.
wait_alive() {
	_wa_pid=$1 _wa_tenths=$2
	shift 2
	for _ in $(seq 1 "$_wa_tenths"); do
		"$@" && return 0
		kill -0 "$_wa_pid" 2>/dev/null || break
		sleep 0.1
	done
	"$@"
}
