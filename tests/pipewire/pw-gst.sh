#!/bin/sh
# SPDX-License-Identifier: MIT
# The stock consumer: GStreamer's pipewiresrc (Debian's gstreamer1.0-pipewire
# 1.4), which offers no SPA_META_SyncTimeline, against pw-frames' producer
# (tests/pipewire/pw-peer.sh has the daemon and linking). Negotiation falls
# back to plain buffers, memfd ones (pipewiresrc takes no dma-buf without a
# modifier), and the producer waits for its write before it queues each. Every frame is written 40 ms after it is queued, filled with
# its frame number: the frames filesink writes must be whole and their
# numbers strictly increasing (a stale read repeats an older number).
#
#   pw-gst.sh PW_FRAMES [--control] [--frames N]
#
# --control: SYNCBRIDGE_DISABLE=1 on the producer (no fence on the dma-buf):
# passes only if stale frames are seen.
#
# pipewiresrc runs with always-copy=true: without it (Debian's 1.4.2, 16
# plain buffers negotiated) every frame came whole and new until each buffer
# had gone out once (8 and 12 frames passed), then no further frame reached
# it (17, 20 stalled): pipewiresrc did not give its pool's buffers back to
# this driver. With the copy it returns each buffer at once: 20 of 20 whole
# and new, and the control saw 16 of 20 stale.
set -u
frames_bin=$1
shift
. "$(dirname "$0")/pw-common.sh"
pw_args "pw-gst.sh PW_FRAMES [--control] [--frames N]" "$@"
pw_require gst-launch-1.0 python3
gst-inspect-1.0 pipewiresrc >/dev/null 2>&1 || { echo "SKIP: no pipewiresrc (gstreamer1.0-pipewire)"; exit 77; }
pw_setup sb-pwgst
env=
[ -n "$control" ] && env=SYNCBRIDGE_DISABLE=1
pw_start_daemon

pw_spawn env $env "$frames_bin" --role producer --frames 100000 >"$rt/producer.log" 2>&1
gst-launch-1.0 -q pipewiresrc always-copy=true stream-properties="props,node.name=sb-gst-consumer" \
	num-buffers="$frames" ! video/x-raw,format=BGRx,width=16,height=16 \
	! filesink sync=false location="$rt/frames.raw" >"$rt/gst.log" 2>&1 &
gpid=$!
pids="$pids $gpid"

pw_link sb-frames-producer sb-gst-consumer || { cat "$rt/producer.log"; exit 1; }

# 45 s by the clock (a count of sleeps runs long under TCG).
if ! pw_wait_exit $gpid 45; then
	echo "not ok - pipewiresrc did not get $frames frames in 45 s ($(($(stat -c %s "$rt/frames.raw" 2>/dev/null || echo 0) / 1024)) came)"
	pw_dump_logs "$rt/gst.log" "$rt/producer.log"; exit 1
fi
grc=$st
[ -s "$rt/gst.log" ] && sed 's/^/# gst: /' "$rt/gst.log"
# Each frame: 16x16 32-bit words, all the frame's number.
res=$(python3 - "$rt/frames.raw" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
n = len(data) // 1024
whole = stale = 0
last = 0
for i in range(n):
    words = struct.unpack("<256I", data[i * 1024:(i + 1) * 1024])
    if len(set(words)) == 1 and words[0] != 0:
        whole += 1
    if words[0] <= last or len(set(words)) != 1:
        stale += 1
    last = max(last, words[0])
print(n, whole, stale)
PY
)
set -- $res
n=${1:-0} whole=${2:-0} stale=${3:-0}
echo "# frames=$n whole=$whole stale=$stale (pipewiresrc exit $grc)"
grep -q 'synced' "$rt/producer.log" && cat "$rt/producer.log"
pw_control_verdict "$stale" "$n" stale
rc=0
pw_check "pipewiresrc exited 0" "pipewiresrc exited $grc" "$grc" = 0
pw_check "$n frames" "$n of $frames frames" "$n" -ge "$frames"
pw_check "every frame whole and new (the fallback: each write waited for before its queue)" \
	"$stale stale or torn frames" "$stale" = 0 -a "$whole" = "$n"
exit $rc
