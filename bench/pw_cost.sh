#!/bin/sh
# SPDX-License-Identifier: MIT
# Figure 9 (docs/performance.md): what explicit sync costs a PipeWire video
# stream. One producer and one consumer process (tests/pipewire/pw-frames)
# through the real daemon, in rounds that alternate between the stream with
# the SyncTimeline meta (libsyncbridge-pipewire on both sides) and the same
# stream without it (SYNCBRIDGE_DISABLE=1: plain buffers, no fences set or
# waited for), so that TCG's slow, drifting clock cancels out in the ratio.
#
#   bench-pw-cost [--rounds N] [--frames N]      (default 3 rounds of 200 frames)
#
# Each frame: the producer's "GPU" writes it 2 ms after it is queued, frames
# every 10 ms. Prints per round the CPU time per frame of each process and
# the time spent in the library's four per-frame calls, then
#   cpu ratio (sync / plain):  producer, consumer, both
#   the sb_pw_* calls:         their time per frame, as a fraction of the
#                              plain stream's CPU time per frame
#   wake after signal:         median and p90 of the time from the acquire
#                              fence's signal (the kernel's timestamp of the
#                              sync_file the consumer waits on) to the
#                              consumer's return from that wait, sync rounds
# Needs the VM guest (vgem, virtio_gpu timelines) and pipewire; a build with
# -Dtests=true (pw-frames is a test program).
set -u
here=$(cd "$(dirname "$0")" && pwd)
frames_bin=$here/../tests/pipewire/pw-frames
rounds=3 frames=200
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--frames) frames=$2; shift ;;
	*) echo "usage: bench-pw-cost [--rounds N] [--frames N]" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$frames_bin" ] || { echo "bench-pw-cost: $frames_bin is not built (configure with -Dtests=true)" >&2; exit 1; }
command -v pipewire >/dev/null || { echo "bench-pw-cost: pipewire is not installed (scripts/setup.sh)" >&2; exit 1; }
[ -e /dev/dri ] || { echo "bench-pw-cost: no /dev/dri: run it in the test guest (scripts/run-bench.sh pw-cost)" >&2; exit 1; }
. "$here/pw-common.sh" # tests/pipewire/pw-common.sh, copied beside it by meson
pw_setup sb-pw-cost
pw_start_daemon

# round MODE N: one stream of $frames frames; appends "MODE prod_ns cons_ns" to $rt/rounds
round() {
	env=
	[ "$1" = plain ] && env=SYNCBRIDGE_DISABLE=1
	name=r$2
	env $env "$frames_bin" --role producer --name $name --frames "$frames" --stats \
		--interval-ms 10 --write-ms 2 >"$rt/p.log" 2>&1 &
	p=$!
	env $env "$frames_bin" --role consumer --name $name --frames "$frames" --stats \
		>"$rt/c.log" 2>&1 &
	c=$!
	pw_link $name-producer $name-consumer >/dev/null || { kill $p $c; cat "$rt/p.log"; return 1; }
	wait $c || { echo "bench-pw-cost: the consumer failed"; cat "$rt/c.log"; kill $p; return 1; }
	kill $p
	wait $p
	pc=$(sed -n 's/^cpu_ns_per_frame=//p' "$rt/p.log")
	cc=$(sed -n 's/^cpu_ns_per_frame=//p' "$rt/c.log")
	pl=$(sed -n 's/^sync_calls_ns_per_frame=//p' "$rt/p.log")
	cl=$(sed -n 's/^sync_calls_ns_per_frame=//p' "$rt/c.log")
	echo "round $2 $1: CPU producer $pc ns/frame, consumer $cc ns/frame; in the sb_pw_* calls producer $pl ns, consumer $cl ns; $(grep '^frames=' "$rt/c.log")"
	echo "$1 $pc $cc $pl $cl" >>"$rt/rounds"
	sed -n 's/^wake_after_signal_us median=\([0-9]*\) p90=\([0-9]*\).*/\1 \2/p' "$rt/c.log" >>"$rt/wake"
}

: >"$rt/rounds"
: >"$rt/wake"
i=0
while [ $i -lt "$rounds" ]; do
	round sync $((2 * i)) || exit 1
	round plain $((2 * i + 1)) || exit 1
	i=$((i + 1))
done
awk '
	$1 == "sync" { sp += $2; sc += $3; sl += $4 + $5; n++ }
	$1 == "plain" { pp += $2; pc += $3 }
	END {
		printf "cpu per frame, mean of %d rounds: sync producer %.0f ns, consumer %.0f ns; plain producer %.0f ns, consumer %.0f ns\n", n, sp / n, sc / n, pp / n, pc / n
		printf "cpu ratio (sync / plain): producer %.2f, consumer %.2f, both %.2f\n", sp / pp, sc / pc, (sp + sc) / (pp + pc)
		printf "the sb_pw_* calls per frame (sync, both sides, wall time, not the wait): %.0f ns = %.3f of the plain stream'"'"'s CPU per frame\n", sl / n, (sl / n) / ((pp + pc) / n)
	}' "$rt/rounds"
n=$(wc -l <"$rt/wake")
if [ "$n" -gt 0 ]; then
	mid=$(((n + 1) / 2))
	med=$(cut -d' ' -f1 "$rt/wake" | sort -n | sed -n "${mid}p")
	p90=$(cut -d' ' -f2 "$rt/wake" | sort -n | sed -n "${mid}p")
	echo "wake after signal (us, the median round's): median $med, p90 $p90"
else
	echo "wake after signal: no sample (no frame waited for a pending fence)"
fi
