#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile and broken peers on a PipeWire stream with explicit sync
# (docs/pipewire.md, "Peers that break the contract"): pw-frames on both
# sides, one of them told to break the contract (--hostile), through the real
# daemon.
#
#   pw-hostile.sh PW_FRAMES CASE
#
# Consumers (the producer must not block, must say so, and must serve the
# next, well-behaved consumer whole frames; its fds are back at exit):
#   never-release   reads and queues buffers back, never signals a release point
#   consumer-dies   exits mid-frame: a buffer acquired, never released or queued back
# Producers (the consumer must refuse with a clear error, its fds back at exit,
# the daemon still answering):
#   bad-timeline    memfds where the SyncObj planes' timeline fds belong
#   stale-acquire   every frame names acquire point 1 (signalled long ago)
#   release-behind  the release point is already signalled
set -u
frames_bin=$1 case_=${2:-}
case $case_ in
never-release | consumer-dies | bad-timeline | stale-acquire | release-behind) ;;
*) echo "usage: pw-hostile.sh PW_FRAMES never-release|consumer-dies|bad-timeline|stale-acquire|release-behind" >&2; exit 2 ;;
esac
. "$(dirname "$0")/pw-common.sh"
pw_require pw-cli
pw_setup sb-pw-hostile
pw_start_daemon
rc=0
ok() { echo "ok - $*"; }
nok() { echo "not ok - $*"; rc=1; }

# fds_equal LOG WHO: the "fds before=N after=M" line of a pw-frames log
fds_equal() {
	line=$(grep -m1 '^fds before=' "$1")
	b=$(echo "$line" | sed 's/fds before=\([0-9]*\).*/\1/')
	a=$(echo "$line" | sed 's/.*after=\([0-9]*\)/\1/')
	if [ -n "$line" ] && [ "$b" = "$a" ]; then ok "$2: fds back where they were ($line)"; else nok "$2: fds ($line)"; fi
}

# good_consumer NAME: a well-behaved consumer of NAME's producer gets 10 whole frames
good_consumer() {
	"$frames_bin" --role consumer --name good --frames 10 >"$rt/good.log" 2>&1 &
	g=$!
	pids="$pids $g"
	pw_link "$1-producer" good-consumer || { nok "link the good consumer"; return; }
	if ! pw_wait_exit $g 40; then
		nok "the next consumer got no 10 frames in 40 s"; cat "$rt/good.log"; return
	fi
	cat "$rt/good.log"
	if [ "$st" = 0 ] && grep -q '^frames=10 torn=0 synced=[1-9]' "$rt/good.log"; then
		ok "the next consumer got 10 whole frames through explicit sync"
	else
		nok "the next consumer (exit $st)"
	fi
}

case $case_ in
never-release | consumer-dies)
	"$frames_bin" --role producer --name prod --frames 100000 --release-timeout-ms 1000 \
		>"$rt/producer.log" 2>&1 &
	p=$!
	pids="$pids $p"
	if [ "$case_" = never-release ]; then
		"$frames_bin" --role consumer --name bad --frames 100000 --hostile never-release \
			>"$rt/bad.log" 2>&1 &
	else
		"$frames_bin" --role consumer --name bad --frames 5 --hostile die \
			>"$rt/bad.log" 2>&1 &
	fi
	h=$!
	pids="$pids $h"
	pw_link prod-producer bad-consumer || { cat "$rt/producer.log"; exit 1; }
	if [ "$case_" = consumer-dies ]; then
		if pw_wait_exit $h 30 && [ "$st" = 3 ]; then ok "the hostile consumer died mid-frame"; else nok "the hostile consumer did not die as told"; fi
	fi
	# The bound is 1 s; the producer ticks every 100 ms.
	sleep 4
	cat "$rt/producer.log"
	kill -0 $p 2>/dev/null && ok "the producer is still running" || nok "the producer is gone"
	if [ "$case_" = never-release ]; then
		if grep -q 'has not released buffer' "$rt/producer.log"; then
			ok "the producer said which buffers the consumer keeps"
		else
			nok "the producer did not say that the consumer keeps its buffers"
		fi
		kill $h
		pw_wait_exit $h 10 && ok "the hostile consumer stopped (exit $st)" || nok "the hostile consumer did not stop"
	fi
	good_consumer prod
	kill $p
	if pw_wait_exit $p 10; then
		tail -n 3 "$rt/producer.log"
		[ "$st" = 0 ] && ok "the producer exited 0" || nok "the producer exited $st"
		grep '^produced=' "$rt/producer.log"
		fds_equal "$rt/producer.log" producer
	else
		nok "the producer did not stop on SIGTERM"
	fi
	;;
*)
	"$frames_bin" --role producer --name bad --frames 100000 --hostile "$case_" >"$rt/bad.log" 2>&1 &
	h=$!
	pids="$pids $h"
	"$frames_bin" --role consumer --name cons --frames 10 >"$rt/consumer.log" 2>&1 &
	c=$!
	pids="$pids $c"
	pw_link bad-producer cons-consumer || { cat "$rt/bad.log"; exit 1; }
	if ! pw_wait_exit $c 30; then
		nok "the consumer neither refused nor finished in 30 s"; cat "$rt/consumer.log"; exit 1
	fi
	cat "$rt/consumer.log"
	case $case_ in
	bad-timeline) want='SyncObj planes are not usable DRM syncobj timelines' ;;
	stale-acquire) want='acquire point is not after the last frame read' ;;
	release-behind) want='release point is behind its timeline' ;;
	esac
	[ "$st" = 1 ] && ok "the consumer refused the stream (exit 1)" || nok "the consumer exited $st"
	grep -q "$want" "$rt/consumer.log" && ok "with the error: $want" || nok "no error saying: $want"
	# Frames before the first broken meta are fine (stale-acquire breaks the
	# second round of buffers); the consumer must stop at the first broken one.
	n=$(sed -n 's/^frames=\([0-9]*\).*/\1/p' "$rt/consumer.log")
	[ -n "$n" ] && [ "$n" -lt 10 ] && ok "stopped at the first broken frame (after $n good ones)" || nok "the consumer read on: frames=$n"
	fds_equal "$rt/consumer.log" consumer
	if pw-cli info 0 >/dev/null 2>&1; then ok "the daemon still answers"; else nok "the daemon does not answer"; fi
	[ $rc = 0 ] || { echo "# the hostile producer's log:"; cat "$rt/bad.log"; }
	;;
esac
exit $rc
