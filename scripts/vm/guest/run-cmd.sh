# Runs the single command of a `vm-run.sh -- CMD` job inside the chroot.
# Invoked by init as: /run/sb-vm/busybox sh /run/sb-vm/run-cmd.sh run|shell
# Files (copied from the host's job folder): env (export lines), cwd, cmd
# (a `set -- 'arg'...` line). Exit status: the command's, or 125 when the
# job itself cannot start.
d=/run/sb-vm
bb=$d/busybox
mode=$1
cwd=$($bb cat $d/cwd)
job='
	. /run/sb-vm/env
	cd "$1" || { echo "vm: cannot cd to $1 in the guest" >&2; exit 125; }
	. /run/sb-vm/cmd
	exec "$@"'

if [ "$mode" = shell ]; then
	# Interactive: the console is the controlling terminal of the command.
	exec $bb setsid -c $bb env -i $bb sh -c "$job" sh "$cwd" </dev/ttyS0 >/dev/ttyS0 2>&1
fi

# stdout and stderr go to the host on the virtio-serial ports named
# sb.stdout and sb.stderr (raw byte streams, no tty).
port() {
	for p in /sys/class/virtio-ports/*; do
		[ "$($bb cat "$p/name" 2>/dev/null)" = "$1" ] && { echo "/dev/${p##*/}"; return 0; }
	done
	echo "vm: no virtio-serial port $1 in the guest" >/dev/console
	echo /dev/console
}
out=$(port sb.stdout)
err=$(port sb.stderr)
$bb env -i $bb sh -c "$job" sh "$cwd" </dev/null >"$out" 2>"$err"
