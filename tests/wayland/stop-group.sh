# SPDX-License-Identifier: MIT
# Sourced by the Wayland test scripts that start a program in a session of its
# own (setsid) and must end all of it: the program, and whatever it ran
# through (unshare, chroot, dbus-run-session).
#   stop_group PID   TERM to PID's process group, up to 5 s for it to go,
#                    then KILL; reaps PID. dash's kill takes -PGID, not "--".
stop_group() {
	kill -TERM "-$1" 2>/dev/null
	for _ in $(seq 1 50); do kill -0 "-$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "-$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
