#!/bin/sh
# SPDX-License-Identifier: MIT
# The camera across processes through PipeWire, once: a PipeWire daemon of
# its own, vivid, syncbridge-demo-camera-pw as the producer and as the
# consumer, their ports linked with pw-link (no session manager runs).
#
#   camera-pw.sh DEMO [--control] [--frames N] [--write-ms N] [--output DIR] [--verbose]
#
# DEMO: the syncbridge-demo-camera-pw binary. --write-ms: the producer's GPU
# step's pause between the two halves (the demo's default, 40, when not
# given). --control: SYNCBRIDGE_DISABLE=1
# on both processes and the consumer passes only if it saw torn frames.
# Prints the consumer's output (its last line `frames=N torn=T synced=S`)
# and exits with its status (a bridged run also fails with synced=0: the
# buffers fell back to plain ones); 77 when something needed is missing. Needs
# root in the test guest (vivid, vgem, /dev/udmabuf for llvmpipe's import):
#   scripts/vm/vm-run.sh -- examples/camera-pipewire/camera-pw.sh build/examples/camera-pipewire/syncbridge-demo-camera-pw
set -u
here=$(cd "$(dirname "$0")" && pwd)
usage='usage: camera-pw.sh DEMO [--control] [--frames N] [--write-ms N] [--output DIR] [--verbose]'
demo=${1:?$usage}
shift
control= frames=48 output= verbose= write_ms=
while [ $# -gt 0 ]; do
	case $1 in
	--control) control=1 ;;
	--frames) frames=$2; shift ;;
	--write-ms) write_ms=$2; shift ;;
	--output) output=$2; shift ;;
	--verbose) verbose=--verbose ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
	shift
done
for c in pipewire pw-link; do
	command -v $c >/dev/null || { echo "SKIP: $c is not installed (scripts/setup.sh installs PipeWire)"; exit 77; }
done
[ -e /dev/dri ] || { echo "SKIP: no /dev/dri (vgem makes the buffers, virtio_gpu the timelines)"; exit 77; }
# vivid: load it if it is not there (the test guest has it as a module).
# Both scripts run by path, through their #!/bin/sh: the guest's own shell
# (busybox) would run its modinfo applet, which needs a modules.dep.
if [ -z "${CAMERA_PW_VIVID:-}" ]; then
	CAMERA_PW_VIVID=1 exec "$here/../camera/with-vivid.sh" "$here/camera-pw.sh" "$demo" \
		${control:+--control} --frames "$frames" ${write_ms:+--write-ms "$write_ms"} \
		${output:+--output "$output"} $verbose
fi

rt=$(mktemp -d /tmp/sb-camera-pw-XXXXXX)
chmod 700 "$rt"
export XDG_RUNTIME_DIR=$rt PIPEWIRE_RUNTIME_DIR=$rt
unset PIPEWIRE_REMOTE
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$rt"' EXIT
spawn() { # LOG CMD...
	log=$1
	shift
	"$@" >"$log" 2>&1 &
	pids="$pids $!"
}

spawn "$rt/daemon.log" pipewire
for _ in $(seq 1 100); do [ -S "$rt/pipewire-0" ] && break; sleep 0.1; done
[ -S "$rt/pipewire-0" ] || { echo "camera-pw.sh: the PipeWire daemon did not start"; cat "$rt/daemon.log"; exit 1; }

env=
[ -n "$control" ] && env=SYNCBRIDGE_DISABLE=1
spawn "$rt/producer.log" env $env "$demo" --role producer ${write_ms:+--write-ms "$write_ms"} $verbose
producer=$!
env $env "$demo" --role consumer --frames "$frames" ${output:+--output "$output"} \
	${control:+--expect-race} $verbose >"$rt/consumer.log" 2>&1 &
consumer=$!
pids="$pids $consumer"

# Link the producer's output port to the consumer's input port, as a user
# would by hand without a session manager.
out= in=
for _ in $(seq 1 300); do
	out=$(pw-link -o 2>/dev/null | grep -m1 "^sb-camera-producer:")
	in=$(pw-link -i 2>/dev/null | grep -m1 "^sb-camera-consumer:")
	[ -n "$out" ] && [ -n "$in" ] && break
	kill -0 $producer 2>/dev/null && kill -0 $consumer 2>/dev/null || break
	sleep 0.1
done
if [ -z "$out" ] || [ -z "$in" ] || ! pw-link "$out" "$in"; then
	echo "camera-pw.sh: could not link the producer's and the consumer's ports"
	kill $consumer 2>/dev/null
	wait $consumer 2>/dev/null
	rc=$?
	cat "$rt/producer.log" "$rt/consumer.log"
	[ $rc = 77 ] && exit 77
	exit 1
fi

wait $consumer
rc=$?
kill $producer 2>/dev/null
wait $producer 2>/dev/null
cat "$rt/producer.log" "$rt/consumer.log"
# With the bridge, whole frames prove something only over explicit sync.
if [ $rc = 0 ] && [ -z "$control" ] && ! grep -q '^frames=.* synced=[1-9]' "$rt/consumer.log"; then
	echo "camera-pw.sh: no buffer negotiated explicit sync (synced=0)"
	exit 1
fi
exit $rc
