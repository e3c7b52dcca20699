#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The parsers of bench/e2e_weston.py (figure 7) on canned client output.

    e2e_parse_test.py BENCH_SCRIPT

The lines are in the shapes libwayland 1.23's WAYLAND_DEBUG=client and
syncbridge-wl-client --timing print (taken from runs in the GPU guest):
a frame is a commit after an attach of a buffer; a commit without an attach,
an attach of nil, another surface's attach, events (delivered and
"discarded") are not; the 32-bit microsecond clock wraps; a wl_display.error
is reported. TAP output; exit 0 when every check passes.
"""
import importlib.machinery
import importlib.util
import sys

failed = 0
count = 0


def check(ok, what):
    global failed, count
    count += 1
    print(("ok %d - " if ok else "not ok %d - ") % count + what)
    failed += not ok


def load(path):
    """The script as a module (its main() is not run)."""
    loader = importlib.machinery.SourceFileLoader("e2e_weston", path)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    return mod


DEBUG = """\
[ 478209.654] {Default Queue} wl_callback#3.done(0)
[ 480374.879] {Default Queue}  -> wl_surface#3.commit()
[ 481829.969] {Default Queue} xdg_toplevel#9.configure(0, 0, array[4])
[ 481847.859] {Default Queue}  -> xdg_surface#8.ack_configure(2)
[ 481900.000] {Default Queue}  -> wl_surface#3.attach(wl_buffer#12, 0, 0)
[ 481900.100] {Default Queue}  -> wl_surface#3.damage(0, 0, 256, 256)
[ 481900.200] {Default Queue}  -> zwp_linux_surface_synchronization_v1#14.set_acquire_fence(fd 9)
[ 481900.300] {Default Queue}  -> zwp_linux_surface_synchronization_v1#14.get_release(new id zwp_linux_buffer_release_v1#17)
[ 481900.400] {Default Queue}  -> wl_surface#3.frame(new id wl_callback#16)
[ 481973.000] {Default Queue}  -> wl_surface#3.commit()
[ 482827.393] {Default Queue} wl_callback#16.done(33224)
[ 482830.000] {Default Queue} discarded wl_buffer#12.release()
[ 482831.000] {Default Queue}  -> wl_surface#3.attach(wl_buffer#13, 0, 0)
[ 482832.259] {Default Queue}  -> wl_surface#3.commit()
[ 482900.000] {Default Queue}  -> wl_surface#3.commit()
[ 482950.000] {Default Queue}  -> wl_surface#3.attach(nil, 0, 0)
[ 482960.000] {Default Queue}  -> wl_surface#3.commit()
[ 482970.000]  -> wl_surface#5.attach(wl_buffer#23, 0, 0)
[ 482980.000] {Default Queue}  -> wl_surface#3.commit()
[4294967.000]  -> wl_surface#3.attach(wl_buffer#12, 0, 0)
[4294967.200]  -> wl_surface#3.commit()
[      0.100]  -> wl_surface#3.attach(wl_buffer#13, 0, 0)
[      0.200]  -> wl_surface#3.commit()
[      1.000] {Display Queue} wl_display#1.error(xdg_wm_base#4, 4, "xdg_surface geometry (500 x 500) is larger than the configured fullscreen state (640 x 480)")
not a debug line: simple-dmabuf-egl exiting
"""

TIMING = """\
client: synchronization: v1
client: frame 0 presented 17 ms after its fence signalled (wp_presentation)
timing: frame=0 stamp_us=17241 presented_rx_us=23930 done_rx_us=9434
client: frame 1 presented 8 ms after its fence signalled (wp_presentation)
timing: frame=1 stamp_us=8424 presented_rx_us=9299 done_rx_us=9312
timing: frame=2 stamp_us=-3067000 presented_rx_us=2000 done_rx_us=1500
timing: frame=3 stamp_us=12 presented_rx_us=34
"""


def main(argv):
    e = load(argv[1])
    r = e.parse_debug_log(DEBUG)
    fr = r["frames"]
    # 481973.000, 482832.259, then the wrap: 4294967.200 and 0.200 (+ 2^32 us)
    check(len(fr) == 4, f"4 frames (commits after an attach of a buffer), got {len(fr)}")
    check(fr[:2] == [481973000, 482832259], f"their times in us, got {fr[:2]}")
    check(fr[2:] == [4294967200, 200 + (1 << 32)], f"the 32-bit clock unwrapped, got {fr[2:]}")
    check(r["acquire"] == 1, f"1 frame with a set_acquire_fence, got {r['acquire']}")
    check(len(r["errors"]) == 1 and r["errors"][0].startswith("xdg_wm_base#4, 4,"),
          f"the wl_display.error reported, got {r['errors']}")
    iv = e.intervals(fr)
    check(iv == [859259, 3812134941, 296], f"intervals, got {iv}")
    check(e.parse_debug_log("")["frames"] == [], "an empty log: no frames")

    t = e.parse_timing(TIMING)
    check([x["frame"] for x in t] == [0, 1, 2], f"3 timing lines (the short one left out), got {t}")
    check(t[1] == {"frame": 1, "stamp": 8424, "presented_rx": 9299, "done_rx": 9312},
          f"fields of frame 1, got {t[1]}")
    check(t[2]["stamp"] == -3067000, "a negative stamp (Weston's stale estimate) kept")

    # nearest rank, as bench/wake_stats.c
    v = list(range(1, 11))
    check((e.pct(v, 50), e.pct(v, 90), e.pct(v, 100)) == (5, 9, 10), "pct: nearest rank on 1..10")
    check(e.pct([7], 90) == 7 and e.pct([], 50) == 0, "pct: one sample, none")
    print(f"1..{count}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
