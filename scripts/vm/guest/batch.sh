# Runs a batch of tests inside the chroot, SYNCBRIDGE_VM_JOBS at a time.
# Invoked by init as: /run/sb-vm/busybox sh /run/sb-vm/batch.sh RESULTS_DIR
# /run/sb-vm/batch (written by vm-run.sh from the list file) has one line per
# test:   t 'NAME' TIMEOUT_S 'ARG0' 'ARG1' ...
# (or     a 'NAME' ... for a test that must run with no other test beside it,
#  or     o 'NAME' ... for one that runs alone on the first CPU only).
# For each test it writes RESULTS_DIR/NAME.log (stdout+stderr), NAME.rc (exit
# status; 124 when it ran past TIMEOUT_S; TIMEOUT_S 0 = no limit) and, when
# the kernel logged something meanwhile, NAME.dmesg. At the end: batch.done.
#
# Why in parallel: under TCG each vCPU is one host thread, and most test
# programs keep one vCPU busy, so one test at a time leaves the others idle.
# Tests start in list order; a test marked "alone" waits until the running
# ones have finished and nothing starts beside it.
d=/run/sb-vm
bb=$d/busybox
R=$1
cwd=$($bb cat $d/cwd)
total=$($bb grep -c '^[tao] ' $d/batch)
n=0

# The tests get only the environment the host passed on.
for v in $($bb env | $bb sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v" 2>/dev/null
done
. $d/env
cd "$cwd" || { echo "vm: cannot cd to $cwd in the guest" >&2; exit 125; }

jobs=${SYNCBRIDGE_VM_JOBS:-$($bb nproc)}
case $jobs in '' | *[!0-9]* | 0) jobs=1 ;; esac

now_cs() { $bb awk '{ split($1, a, "."); print a[1] * 100 + a[2] }' /proc/uptime; }

$bb dmesg -c >/dev/null 2>&1

# Finished tests write a line to this FIFO; the shell holds it open for both
# reading and writing, so neither side ever blocks on open() and a read
# sleeps until some test has finished (no polling).
$bb mkdir -p $d/running
$bb rm -f $d/done.fifo $d/gave-up
$bb mkfifo $d/done.fifo
exec 3<>$d/done.fifo
running=0
reap() {
	read -r _ <&3
	running=$((running - 1))
}

# run NAME LIMIT ARG0 ARGS...: one test, in the foreground of the caller.
run() {
	name=$1 limit=$2
	shift 2
	$bb rm -f "$R/$name.rc" "$R/$name.log" "$R/$name.dmesg" "$d/timed-out.$name"
	$bb rm -rf "$R/$name.kept"
	# SYNCBRIDGE_VM_AFTER_TIMEOUT=stop, after a test timed out: a failure
	# with the reason, at once, rather than every later test waiting out
	# its own limit on a GPU that no longer answers (the venus guest).
	if [ -e "$d/gave-up" ]; then
		echo "vm: $name: not run: $($bb cat "$d/gave-up")" >"$R/$name.log"
		echo 125 >"$R/$name.rc"
		printf 'vm: [%d/%d] %s: not run\n' "$idx" "$total" "$name" >/dev/console
		return
	fi
	: >"$d/running/$name"
	start=$(now_cs)
	# Appending (O_APPEND): the time-out handler below appends the stacks to
	# the same file; a plain > kept the test's own offset and wrote over them
	# (a venus hang's log lost its kernel stacks that way, 2026-12-07).
	: >"$R/$name.log"
	# SB_TEST_KEEP_DIR: where a test may leave its files for the host
	# (tests/wayland/stock_client.py does when it fails).
	SB_TEST_KEEP_DIR="$R/$name.kept" $bb setsid "$@" </dev/null >>"$R/$name.log" 2>&1 3>&- &
	pid=$!
	wpid=
	if [ "$limit" -gt 0 ]; then
		$bb setsid $bb sh -c '
			'$bb' sleep "$1"
			: >"$3"
			# Where it hangs, for the log: each thread'"'"'s kernel stack
			# (a task stuck in a driver ignores the kill below).
			for t in /proc/"$2"/task/*; do
				echo "vm: timed out: task ${t##*/} $('$bb' cat $t/comm 2>/dev/null), state $('$bb' cut -d" " -f3 $t/stat 2>/dev/null), in $('$bb' cat $t/wchan 2>/dev/null):"
				'$bb' cat $t/stack 2>/dev/null
			done >>"$4" 2>&1
			# And each thread'"'"'s user stack, where the root has gdb (a
			# hang in a futex says nothing without it). Every process of
			# the test'"'"'s group; gdb gets 60 s (SYNCBRIDGE_VM_GDB_TIMEOUT), symbols load slowly in TCG.
			if [ -x /usr/bin/gdb ] && [ "${SYNCBRIDGE_VM_GDB:-1}" != 0 ]; then
				for p in /proc/[0-9]*; do
					[ "$('$bb' cut -d" " -f5 $p/stat 2>/dev/null)" = "$2" ] || continue
					echo "vm: timed out: user stacks of process ${p##*/} ($('$bb' cat $p/comm 2>/dev/null)):"
					'$bb' timeout "${SYNCBRIDGE_VM_GDB_TIMEOUT:-60}" /usr/bin/gdb -p "${p##*/}" -batch -nx -q \
						-ex "thread apply all bt 40" 2>&1 </dev/null |
						'$bb' grep -v "^\[New LWP\|^\[Thread debugging\|^Using host libthread_db"
				done >>"$4" 2>&1
			fi
			# The nested venus guest: its GPU is QEMU and the render server
			# in the plain guest, which this guest cannot see. Ask the
			# vm-run.sh there for their stacks (it polls for the request).
			if [ "${SYNCBRIDGE_VM_HOST_DUMP:-0}" = 1 ]; then
				: >"$5/.vm/host-dump.req"
				i=0
				while [ ! -e "$5/.vm/host-dump.txt" ] && [ $i -lt 120 ]; do '$bb' sleep 1; i=$((i + 1)); done
				echo "vm: timed out: the host side of this guest'"'"'s GPU (QEMU and the render server, in the plain guest):"
				'$bb' cat "$5/.vm/host-dump.txt" 2>/dev/null || echo "vm: (no answer in 120 s)"
				'$bb' rm -f "$5/.vm/host-dump.txt"
			fi >>"$4" 2>&1
			'$bb' kill -TERM -"$2" 2>/dev/null
			'$bb' sleep 2
			'$bb' kill -KILL -"$2" 2>/dev/null' sh "$limit" "$pid" "$d/timed-out.$name" "$R/$name.log" "$R" 3>&- &
		wpid=$!
	fi
	wait "$pid" 2>/dev/null
	rc=$?
	if [ -n "$wpid" ]; then
		$bb kill -KILL -"$wpid" 2>/dev/null
		wait "$wpid" 2>/dev/null
	fi
	# Anything the test left behind in its process group goes too.
	$bb kill -KILL -"$pid" 2>/dev/null
	if [ -e "$d/timed-out.$name" ]; then
		rc=124
		echo "vm: $name: timed out after ${limit}s" >>"$R/$name.log"
		[ "${SYNCBRIDGE_VM_AFTER_TIMEOUT:-go-on}" != stop ] ||
			echo "$name timed out before it in this guest, whose GPU may no longer answer (SYNCBRIDGE_VM_AFTER_TIMEOUT=stop)" >"$d/gave-up"
	fi
	$bb rm -f "$d/running/$name" "$d/timed-out.$name"
	# The kernel log is not per process: with tests side by side, what was
	# logged since the last test ended may be another's. Say which ran.
	k=$($bb dmesg -c 2>/dev/null)
	if [ -n "$k" ]; then
		others=$(cd $d/running && echo *)
		[ "$others" = '*' ] && others=
		{
			[ -z "$others" ] || echo "vm: kernel messages since the previous test ended; running beside $name: $others"
			printf '%s\n' "$k"
		} >"$R/$name.dmesg"
	fi
	el=$(($(now_cs) - start))
	echo "$rc" >"$R/$name.rc"
	case $rc in
	0) st=ok ;;
	77) st=skip ;;
	124) st=TIMEOUT ;;
	*) st="FAIL rc=$rc" ;;
	esac
	printf 'vm: [%d/%d] %s: %s (%d.%02ds)\n' "$idx" "$total" "$name" "$st" $((el / 100)) $((el % 100)) >/dev/console
}

# t: a test that may run beside others.
t() {
	n=$((n + 1))
	while [ "$running" -ge "$jobs" ]; do reap; done
	idx=$n
	(
		run "$@"
		echo "$1" >&3
	) &
	running=$((running + 1))
}

# a: a test that runs alone (timing figures, or a whole-system view).
a() {
	n=$((n + 1))
	while [ "$running" -gt 0 ]; do reap; done
	idx=$n
	run "$@"
}

# o: a test that runs alone with every CPU but cpu0 offline. Turning kernel
# trace events on or off live-patches kernel code (text_poke_bp: a breakpoint
# byte, then the new bytes, then a sync of every CPU). Under QEMU's
# multi-threaded TCG another vCPU can still run into that breakpoint once the
# patch is done, and the kernel oopses ("Oops: int3" at a tracepoint site):
# toggling syscall events 300 times while two processes make syscalls killed
# the 2-CPU guest within 3 s, twice; with cpu1 offline, or with single-threaded
# TCG, it never did. On one CPU nothing runs beside the patcher.
o() {
	n=$((n + 1))
	while [ "$running" -gt 0 ]; do reap; done
	idx=$n
	off=
	for c in /sys/devices/system/cpu/cpu[1-9]*/online; do
		[ -e "$c" ] || continue
		[ "$($bb cat "$c")" = 1 ] || continue
		echo 0 >"$c" 2>/dev/null && off="$off $c"
	done
	run "$@"
	for c in $off; do echo 1 >"$c" 2>/dev/null; done
}

. $d/batch
while [ "$running" -gt 0 ]; do reap; done
: >"$R/batch.done"
exit 0
