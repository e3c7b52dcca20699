# Runs a batch of tests inside the chroot, one after the other.
# Invoked by init as: /run/sb-vm/busybox sh /run/sb-vm/batch.sh RESULTS_DIR
# /run/sb-vm/batch (written by vm-run.sh from the list file) has one line per
# test:   t 'NAME' TIMEOUT_S 'ARG0' 'ARG1' ...
# For each test it writes RESULTS_DIR/NAME.log (stdout+stderr), NAME.rc (exit
# status; 124 when it ran past TIMEOUT_S; TIMEOUT_S 0 = no limit) and, when
# the kernel logged something meanwhile, NAME.dmesg. At the end: batch.done.
d=/run/sb-vm
bb=$d/busybox
R=$1
cwd=$($bb cat $d/cwd)
total=$($bb grep -c '^t ' $d/batch)
n=0

# The tests get only the environment the host passed on.
for v in $($bb env | $bb sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v" 2>/dev/null
done
. $d/env
cd "$cwd" || { echo "vm: cannot cd to $cwd in the guest" >&2; exit 125; }

now_cs() { $bb awk '{ split($1, a, "."); print a[1] * 100 + a[2] }' /proc/uptime; }

$bb dmesg -c >/dev/null 2>&1

t() {
	name=$1 limit=$2
	shift 2
	n=$((n + 1))
	$bb rm -f "$R/$name.rc" "$R/$name.log" "$R/$name.dmesg" $d/timed-out
	start=$(now_cs)
	$bb setsid "$@" </dev/null >"$R/$name.log" 2>&1 &
	pid=$!
	wpid=
	if [ "$limit" -gt 0 ]; then
		$bb setsid $bb sh -c '
			'$bb' sleep "$1"
			: >'$d'/timed-out
			'$bb' kill -TERM -"$2" 2>/dev/null
			'$bb' sleep 2
			'$bb' kill -KILL -"$2" 2>/dev/null' sh "$limit" "$pid" &
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
	if [ -e $d/timed-out ]; then
		rc=124
		echo "vm: $name: timed out after ${limit}s" >>"$R/$name.log"
	fi
	echo "$rc" >"$R/$name.rc"
	k=$($bb dmesg -c 2>/dev/null)
	[ -n "$k" ] && printf '%s\n' "$k" >"$R/$name.dmesg"
	el=$(($(now_cs) - start))
	case $rc in
	0) st=ok ;;
	77) st=skip ;;
	124) st=TIMEOUT ;;
	*) st="FAIL rc=$rc" ;;
	esac
	printf 'vm: [%d/%d] %s: %s (%d.%02ds)\n' "$n" "$total" "$name" "$st" $((el / 100)) $((el % 100)) >/dev/console
}

. $d/batch
: >"$R/batch.done"
exit 0
