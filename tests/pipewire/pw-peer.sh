#!/bin/sh
# SPDX-License-Identifier: MIT
# Two processes, one video stream, through the real PipeWire daemon
# (docs/pipewire.md): pw-frames as the producer (vgem dma-bufs whose frames
# are written after they are queued, behind a pending vgem fence) and as the
# consumer, with the explicit sync of libsyncbridge-pipewire in between.
#
#   pw-peer.sh PW_FRAMES [--control] [--frames N]
#
# The daemon is Debian's pipewire (bookworm-backports 1.4) with its default
# configuration, in a runtime directory of its own; no session manager runs,
# so the two streams are linked the way a user would by hand: pw-link.
# Passes when the consumer saw N frames through explicit sync, none torn.
# --control: SYNCBRIDGE_DISABLE=1 on both sides (plain buffers, no waits):
# passes only if torn frames are seen — what the bridge prevents.
set -u
frames_bin=$1
shift
. "$(dirname "$0")/pw-common.sh"
pw_args "pw-peer.sh PW_FRAMES [--control] [--frames N]" "$@"
pw_require
pw_setup sb-pw
env=
[ -n "$control" ] && env=SYNCBRIDGE_DISABLE=1
pw_start_daemon

pw_spawn env $env "$frames_bin" --role producer --frames 100000 >"$rt/producer.log" 2>&1
ppid=$!
env $env "$frames_bin" --role consumer --frames "$frames" >"$rt/consumer.log" 2>&1 &
cpid=$!
pids="$pids $cpid"

# Link the producer's output port to the consumer's input port (no session manager).
pw_link sb-frames-producer sb-frames-consumer || { cat "$rt/producer.log"; exit 1; }

# The consumer exits after its frames (10 per second); 45 s at most, by the
# clock (a count of sleeps runs long under TCG, past meson's timeout).
if ! pw_wait_exit $cpid 45; then
	echo "not ok - the consumer did not get $frames frames in 45 s"
	pw_dump_logs "$rt/consumer.log" "$rt/producer.log"; exit 1
fi
crc=$st
cat "$rt/consumer.log"
# The producer's summary: frames dropped, buffers the graph recycled unseen.
kill $ppid 2>/dev/null && pw_wait_exit $ppid 10 && sed -n 's/^produced=/# producer: produced=/p' "$rt/producer.log"
grep -q '^frames=' "$rt/consumer.log" || { echo "not ok - the consumer failed (exit $crc)"; cat "$rt/producer.log"; exit 1; }
line=$(grep '^frames=' "$rt/consumer.log")
got=$(echo "$line" | sed 's/.*frames=\([0-9]*\).*/\1/')
torn=$(echo "$line" | sed 's/.*torn=\([0-9]*\).*/\1/')
synced=$(echo "$line" | sed 's/.*synced=\([0-9]*\).*/\1/')
pw_control_verdict "$torn" "$got" torn
rc=0
pw_check "the consumer exited 0" "the consumer exited $crc" "$crc" = 0
pw_check "$got frames" "$got of $frames frames" "$got" -ge "$frames"
pw_check "explicit sync negotiated ($synced buffers with the SyncTimeline meta)" \
	"no buffer with explicit sync (the fallback was negotiated)" "$synced" -gt 0
pw_check "no torn frame" "$torn torn frames" "$torn" = 0
exit $rc
