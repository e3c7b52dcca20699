#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""protocol_check.py (the WAYLAND_DEBUG protocol checker) on canned logs.

    protocol_check_test.py PROTOCOL_CHECK_PY [XML_DIR ...]

XML_DIR: more protocol XML (e.g. wayland-protocols' pkgdatadir where it is
not /usr/share/wayland-protocols), passed on as --xml-dir.

The logs are in the shape libwayland-client 1.23 prints with WAYLAND_DEBUG=1
(queue names, " -> " on requests, "#" between interface and id, "discarded",
"new id [unknown]#N" on bind). A complete correct session (registry, dma-buf
default and surface feedback, an xdg_toplevel configure sequence, frame
callbacks, presentation feedback, a buffer release, a keyboard focus) has no
violation, nor does its 1.21 spelling ("@", no queues); each broken log has
exactly the violation it was built with. Then the command line on one good and
one bad log (exit 0 / 1), and 100,000 lines in a few seconds. TAP output;
exit 0 when every check passes.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

failed = 0
count = 0


def check(ok, what):
    global failed, count
    count += 1
    print(("ok %d - " if ok else "not ok %d - ") % count + what, flush=True)
    failed += not ok


_t = [1000000000]


def stamp(lines):
    """Timestamps in front of the canned lines ("@Q " = the default queue)."""
    out = []
    for ln in lines.strip("\n").split("\n"):
        if ln.startswith("|"):          # not a debug line: as it is
            out.append(ln[1:])
            continue
        _t[0] += 417
        ln = ln.replace("@Q ", "{Default Queue} ").replace("@D ", "{Display Queue} ")
        out.append("[%7u.%03u] %s" % (_t[0] // 1000, _t[0] % 1000, ln))
    return "\n".join(out) + "\n"


# The registry round trip of every log below: each global (name, the version
# advertised, the version bound) is bound with the next id from #4 on: wl_shm
# #4, wl_compositor #5, zwp_linux_dmabuf_v1 #6, xdg_wm_base #7,
# wp_presentation #8, zwp_linux_explicit_synchronization_v1 #9, wl_output
# #10, wl_seat #11.
GLOBALS = [("wl_shm", 2, 1), ("wl_compositor", 5, 4), ("zwp_linux_dmabuf_v1", 4, 4), ("xdg_wm_base", 6, 6),
           ("wp_presentation", 1, 1), ("zwp_linux_explicit_synchronization_v1", 2, 2), ("wl_output", 4, 4),
           ("wl_seat", 7, 7)]
PREFIX = """
@Q  -> wl_display#1.get_registry(new id wl_registry#2)
@Q  -> wl_display#1.sync(new id wl_callback#3)
@D wl_display#1.delete_id(3)
""" + "".join("@Q wl_registry#2.global(%d, \"%s\", %d)\n"
              "@Q  -> wl_registry#2.bind(%d, \"%s\", %d, new id [unknown]#%d)\n"
              % (n, name, version, n, name, bound, n + 3)
              for n, (name, version, bound) in enumerate(GLOBALS, 1)) + """@Q wl_callback#3.done(0)
@Q  -> wl_compositor#5.create_surface(new id wl_surface#12)
"""

GOOD = PREFIX + """
@Q discarded wl_shm#4.format(0)
@Q wl_shm#4.format(1)
@Q wl_output#10.geometry(0, 0, 169, 127, 0, "syncbridge", "headless, 1", 0)
@Q wl_output#10.mode(3, 640, 480, 60000)
@Q wl_output#10.scale(1)
@Q wl_output#10.name("HEADLESS-1")
@Q wl_output#10.done()
@Q wl_seat#11.capabilities(2)
@Q wl_seat#11.name("seat0")
@Q wp_presentation#8.clock_id(1)
 -> zwp_linux_dmabuf_v1#6.get_default_feedback(new id zwp_linux_dmabuf_feedback_v1#3)
zwp_linux_dmabuf_feedback_v1#3.format_table(fd 5, 64)
zwp_linux_dmabuf_feedback_v1#3.main_device(array[8])
zwp_linux_dmabuf_feedback_v1#3.tranche_target_device(array[8])
zwp_linux_dmabuf_feedback_v1#3.tranche_formats(array[8])
zwp_linux_dmabuf_feedback_v1#3.tranche_flags(0)
zwp_linux_dmabuf_feedback_v1#3.tranche_done()
zwp_linux_dmabuf_feedback_v1#3.done()
 -> zwp_linux_dmabuf_feedback_v1#3.destroy()
@D wl_display#1.delete_id(3)
|libEGL debug: using driver virtio_gpu for 5
|libEGL debug: pci id for fd 5: 1af4:1050, driver virtio_gpu [1.000] wl_callback#3.done(0)
@Q  -> zwp_linux_dmabuf_v1#6.get_surface_feedback(new id zwp_linux_dmabuf_feedback_v1#13, wl_surface#12)
@Q zwp_linux_dmabuf_feedback_v1#13.format_table(fd 6, 64)
@Q zwp_linux_dmabuf_feedback_v1#13.main_device(array[8])
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_target_device(array[8])
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_flags(1)
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_formats(array[4])
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_formats(array[2])
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_done()
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_target_device(array[8])
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_flags(0)
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_formats(array[8])
@Q zwp_linux_dmabuf_feedback_v1#13.tranche_done()
@Q zwp_linux_dmabuf_feedback_v1#13.done()
@Q  -> zwp_linux_explicit_synchronization_v1#9.get_synchronization(new id zwp_linux_surface_synchronization_v1#14, wl_surface#12)
@Q  -> xdg_wm_base#7.get_xdg_surface(new id xdg_surface#15, wl_surface#12)
@Q  -> xdg_surface#15.get_toplevel(new id xdg_toplevel#16)
@Q  -> xdg_toplevel#16.set_title("good, fine")
@Q  -> wl_surface#12.commit()
@Q xdg_wm_base#7.ping(5)
@Q  -> xdg_wm_base#7.pong(5)
@Q xdg_toplevel#16.configure_bounds(640, 480)
@Q xdg_toplevel#16.wm_capabilities(array[8])
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_surface#15.configure(7)
@Q  -> xdg_surface#15.ack_configure(7)
@Q  -> wl_shm#4.create_pool(new id wl_shm_pool#17, fd 7, 40000)
@Q  -> wl_shm_pool#17.create_buffer(new id wl_buffer#18, 0, 100, 100, 400, 1)
@Q  -> wl_surface#12.attach(wl_buffer#18, 0, 0)
@Q  -> wl_surface#12.damage_buffer(0, 0, 100, 100)
@Q  -> wl_surface#12.frame(new id wl_callback#19)
@Q  -> wp_presentation#8.feedback(wl_surface#12, new id wp_presentation_feedback#20)
@Q  -> zwp_linux_surface_synchronization_v1#14.get_release(new id zwp_linux_buffer_release_v1#21)
@Q  -> wl_surface#12.commit()
@Q wl_surface#12.enter(wl_output#10)
@Q wp_presentation_feedback#20.sync_output(wl_output#10)
@Q wp_presentation_feedback#20.presented(0, 1000, 5000, 16666666, 0, 42, 7)
@D wl_display#1.delete_id(20)
@Q zwp_linux_buffer_release_v1#21.immediate_release()
@D wl_display#1.delete_id(21)
@D wl_display#1.delete_id(19)
@Q wl_callback#19.done(1234)
@Q  -> wl_surface#12.frame(new id wl_callback#19)
@Q  -> wl_surface#12.attach(wl_buffer#18, 0, 0)
@Q  -> wl_surface#12.commit()
@Q wl_buffer#18.release()
@Q xdg_toplevel#16.configure(640, 480, array[4])
@Q xdg_surface#15.configure(8)
@Q  -> xdg_surface#15.ack_configure(8)
@D wl_display#1.delete_id(19)
@Q wl_callback#19.done(1250)
@Q  -> wl_seat#11.get_keyboard(new id wl_keyboard#22)
@Q wl_keyboard#22.keymap(1, fd 8, 48000)
@Q wl_keyboard#22.repeat_info(25, 600)
@Q wl_keyboard#22.enter(10, wl_surface#12, array[0])
@Q wl_keyboard#22.modifiers(11, 0, 0, 0, 0)
@Q wl_keyboard#22.key(12, 100, 30, 1)
@Q wl_keyboard#22.key(13, 180, 30, 0)
@Q wl_keyboard#22.leave(14, wl_surface#12)
@Q  -> wl_surface#12.frame(new id wl_callback#19)
@Q  -> wl_surface#12.commit()
@Q  -> wl_callback#19.destroy()
@Q discarded wl_callback#19.done(1266)
@Q  -> wl_surface#12.frame(new id wl_callback#23)
@Q  -> wl_surface#12.commit()
zwp_linux_dmabuf_feedback_v1#13.main_device(array[8])
"""
# (the last two: a callback pending, a feedback batch begun: the client was
# stopped, not a violation)


def feedback(events):
    """A surface feedback with these events (a batch on zwp_linux_dmabuf_feedback_v1#13)."""
    return PREFIX + "@Q  -> zwp_linux_dmabuf_v1#6.get_surface_feedback(new id " \
        "zwp_linux_dmabuf_feedback_v1#13, wl_surface#12)\n" + "".join(
            "@Q zwp_linux_dmabuf_feedback_v1#13.%s\n" % e for e in re.findall(r"\w+\([^)]*\)", events))


TOPLEVEL = PREFIX + """
@Q  -> xdg_wm_base#7.get_xdg_surface(new id xdg_surface#15, wl_surface#12)
@Q  -> xdg_surface#15.get_toplevel(new id xdg_toplevel#16)
"""
CAPS = "@Q xdg_toplevel#16.wm_capabilities(array[8])\n"
# a wl_data_device (#14) and a selection offer with its one mime type
OFFER = PREFIX + """
@Q  -> wl_registry#2.bind(10, "wl_data_device_manager", 3, new id [unknown]#13)
@Q  -> wl_data_device_manager#13.get_data_device(new id wl_data_device#14, wl_seat#11)
@Q wl_data_device#14.data_offer(new id wl_data_offer#4278190080)
@Q wl_data_offer#4278190080.offer("text/plain")
"""

BAD = [
    # (what, log, words the one message must hold)
    ("(a) the old empty tranche (issue 26): format_table, main_device, tranche_done, done",
     feedback("format_table(fd 5, 64) main_device(array[8]) tranche_done() done()"),
     ["zwp_linux_dmabuf_feedback_v1#13", "tranche_done with no tranche_target_device",
      "no tranche_flags", "no tranche_formats", "linux-dmabuf-v1.xml"]),
    ("(b) tranche_formats with array[0]",
     feedback("format_table(fd 5, 64) main_device(array[8]) tranche_target_device(array[8]) "
              "tranche_flags(0) tranche_formats(array[0]) tranche_done() done()"),
     ["zwp_linux_dmabuf_feedback_v1#13", "tranche_formats", "array[0]"]),
    ("(c) a done with no tranche",
     feedback("format_table(fd 5, 64) main_device(array[8]) done()"),
     ["zwp_linux_dmabuf_feedback_v1#13", "done with no tranche"]),
    ("(d) xdg_toplevel.configure not followed by xdg_surface.configure before the next one",
     TOPLEVEL + """
@Q  -> wl_surface#12.commit()
""" + CAPS + """
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_surface#15.configure(3)
@Q xdg_toplevel#16.configure(100, 100, array[0])
@Q xdg_toplevel#16.configure(200, 200, array[0])
@Q xdg_surface#15.configure(4)
""", ["xdg_toplevel#16", "was not followed by xdg_surface#15.configure", "xdg-shell.xml"]),
    ("(e) an xdg_surface.configure before the first commit",
     TOPLEVEL + CAPS + """
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_surface#15.configure(3)
@Q  -> wl_surface#12.commit()
""", ["xdg_surface#15", "before the client's first wl_surface.commit", "wl_surface#12"]),
    ("(f) a wl_callback done twice",
     PREFIX + """
@Q  -> wl_surface#12.frame(new id wl_callback#13)
@Q  -> wl_surface#12.commit()
@Q wl_callback#13.done(10)
@Q wl_callback#13.done(11)
""", ["wl_callback#13", "done after done"]),
    ("(g) a presentation feedback presented, then discarded",
     PREFIX + """
@Q  -> wp_presentation#8.feedback(wl_surface#12, new id wp_presentation_feedback#13)
@Q  -> wl_surface#12.commit()
@Q wp_presentation_feedback#13.presented(0, 1000, 5000, 16666666, 0, 42, 7)
@Q wp_presentation_feedback#13.discarded()
""", ["wp_presentation_feedback#13", "discarded after presented"]),
    ("(h) wl_output.name (since 4) on a wl_output bound at version 2",
     PREFIX + """
@Q wl_registry#2.global(9, "wl_output", 4)
@Q  -> wl_registry#2.bind(9, "wl_output", 2, new id [unknown]#13)
@Q wl_output#13.geometry(0, 0, 169, 127, 0, "syncbridge", "headless", 0)
@Q wl_output#13.name("HEADLESS-2")
@Q wl_output#13.done()
""", ["wl_output#13", "name is since version 4", "version 2"]),
    ("(i) an event name the interface does not have",
     PREFIX + """
@Q  -> wl_surface#12.frame(new id wl_callback#13)
@Q wl_callback#13.finished(10)
""", ["wl_callback#13", "no event 'finished'"]),
    ("(j) wl_keyboard.key before enter",
     PREFIX + """
@Q  -> wl_seat#11.get_keyboard(new id wl_keyboard#13)
@Q wl_keyboard#13.keymap(1, fd 8, 48000)
@Q wl_keyboard#13.key(12, 100, 30, 1)
@Q wl_keyboard#13.enter(13, wl_surface#12, array[0])
""", ["wl_keyboard#13", "key outside the focus"]),
    ("(k) a wl_display.error event",
     PREFIX + """
@Q  -> wl_surface#12.attach(nil, 0, 0)
@D wl_display#1.error(wl_surface#12, 2, "invalid buffer, size")
""", ["wl_display#1", "error on wl_surface#12", "code 2", "invalid buffer, size"]),
    # Beyond the list: the generic checks and the other sequences.
    ("an event with the wrong number of arguments",
     PREFIX + "@Q wl_shm#4.format(0, 1)\n", ["wl_shm#4", "format with 2 arguments, the XML has 1"]),
    ("an event on an id the client never created",
     PREFIX + "@Q wl_callback#40.done(1)\n", ["wl_callback#40", "never created"]),
    ("a 1.23 'discarded [unknown]' event on an id the client never created",
     PREFIX + "discarded [unknown]#41.[event 0](0 fd, 12 byte)\n",
     ["#41", "never created"]),
    ("configure_bounds not followed by xdg_toplevel.configure",
     TOPLEVEL + "@Q  -> wl_surface#12.commit()\n" + CAPS + """
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_toplevel#16.configure_bounds(640, 480)
@Q xdg_surface#15.configure(3)
""", ["xdg_surface#15", "configure_bounds", "was not followed by xdg_toplevel#16.configure"]),
    ("no wm_capabilities before the first xdg_surface.configure of a v6 toplevel",
     TOPLEVEL + """
@Q  -> wl_surface#12.commit()
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_surface#15.configure(3)
""", ["xdg_surface#15", "no wm_capabilities"]),
    ("an xdg_surface.configure serial repeated",
     TOPLEVEL + "@Q  -> wl_surface#12.commit()\n" + CAPS + """
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_surface#15.configure(3)
@Q xdg_toplevel#16.configure(0, 0, array[0])
@Q xdg_surface#15.configure(3)
""", ["xdg_surface#15", "serial 3 sent twice"]),
    ("a second main_device in one feedback batch",
     feedback("format_table(fd 5, 64) main_device(array[8]) main_device(array[8]) "
              "tranche_target_device(array[8]) tranche_flags(0) tranche_formats(array[8]) "
              "tranche_done() done()"), ["second main_device"]),
    ("a feedback done with an unfinished tranche",
     feedback("format_table(fd 5, 64) main_device(array[8]) tranche_target_device(array[8]) "
              "tranche_flags(0) tranche_formats(array[8]) tranche_done() "
              "tranche_target_device(array[8]) done()"), ["done with an unfinished tranche"]),
    ("a feedback batch without any format_table",
     feedback("main_device(array[8]) tranche_target_device(array[8]) tranche_flags(0) "
              "tranche_formats(array[8]) tranche_done() done()"), ["no format_table"]),
    ("a tranche_target_device of 3 bytes",
     feedback("format_table(fd 5, 64) main_device(array[8]) tranche_target_device(array[3]) "
              "tranche_flags(0) tranche_formats(array[8]) tranche_done() done()"),
     ["tranche_target_device of 3 bytes"]),
    ("a buffer release fenced, then immediate",
     PREFIX + """
@Q  -> zwp_linux_explicit_synchronization_v1#9.get_synchronization(new id zwp_linux_surface_synchronization_v1#13, wl_surface#12)
@Q  -> zwp_linux_surface_synchronization_v1#13.get_release(new id zwp_linux_buffer_release_v1#14)
@Q zwp_linux_buffer_release_v1#14.fenced_release(fd 9)
@Q zwp_linux_buffer_release_v1#14.immediate_release()
""", ["zwp_linux_buffer_release_v1#14", "immediate_release after fenced_release"]),
    ("a wl_data_device.selection naming an offer of no data_offer event",
     OFFER + "@Q wl_data_device#14.selection(wl_data_offer#4278190081)\n",
     ["wl_data_device#14", "selection names wl_data_offer#4278190081"]),
    ("a wl_data_offer.offer after the selection that used the offer",
     OFFER + """@Q wl_data_device#14.selection(wl_data_offer#4278190080)
@Q wl_data_offer#4278190080.offer("text/html")
""", ["wl_data_offer#4278190080", "after the wl_data_device.selection"]),
]


GOOD_IFACES = ("zwp_linux_dmabuf_feedback_v1", "xdg_toplevel", "xdg_surface", "wl_callback",
               "wp_presentation_feedback", "zwp_linux_buffer_release_v1", "wl_keyboard")


def main():
    if len(sys.argv) < 2:
        print("usage: protocol_check_test.py PROTOCOL_CHECK_PY [XML_DIR ...]", file=sys.stderr)
        return 2
    path = os.path.abspath(sys.argv[1])
    xml = sys.argv[2:]
    xml_args = [a for d in xml for a in ("--xml-dir", d)]
    sys.path.insert(0, os.path.dirname(path))
    sys.dont_write_bytecode = True      # no __pycache__ in the source tree
    import protocol_check as pc

    print(f"1..{len(GOOD_IFACES) + 2 + len(BAD) + 3}", flush=True)
    good = stamp(GOOD)
    res = pc.summary(good, xml)
    v = pc.check(good, xml)
    check(not v and res.events > 50 and res.objects > 20,
          f"the complete correct log: {res.events} events on {res.objects} objects, "
          f"{len(v)} violations" + "".join(f"\n#   line {n}: {m}" for n, m in v))
    for iface in GOOD_IFACES:
        check(res.per_interface.get(iface, 0) > 0,
              f"the correct log's {iface} events were checked ({res.per_interface.get(iface, 0)})")
    # libwayland 1.21: "@" and no queue names.
    old = "".join(ln.replace("{Default Queue} ", "").replace("{Display Queue} ", "").replace("#", "@")
                  + "\n" for ln in good.splitlines())
    r21 = pc.summary(old, xml)
    check(not r21.violations and r21.events == res.events and r21.objects == res.objects,
          f"the same log in 1.21's spelling: {r21.events} events on {r21.objects} objects, "
          f"{len(r21.violations)} violations")

    for what, log, words in BAD:
        text = stamp(log)
        v = pc.check(text, xml)
        ok = len(v) == 1 and all(w in v[0][1] for w in words)
        check(ok, what + ": " + ("; ".join(f"line {n}: {m}" for n, m in v) or "no violation"))

    # The command line: exit 0 on the good log, 1 with the right line on a bad one.
    with tempfile.TemporaryDirectory() as d:
        gp, bp = os.path.join(d, "good.log"), os.path.join(d, "bad.log")
        with open(gp, "w") as f:
            f.write(good)
        bad = stamp(BAD[0][1])
        with open(bp, "w") as f:
            f.write(bad)
        r = subprocess.run([sys.executable, path] + xml_args + [gp], capture_output=True, text=True)
        last = r.stdout.strip().splitlines()[-1:] or [""]
        check(r.returncode == 0 and last[0].startswith("protocol-check: ")
              and last[0].endswith(" checked, 0 violations"),
              f"command line, good log: exit {r.returncode}, '{last[0]}'")
        r = subprocess.run([sys.executable, path, "--xml-dir", d] + xml_args + [bp],
                           capture_output=True, text=True)
        out = r.stdout.strip().splitlines()
        want = f"protocol-check: {len(bad.splitlines()) - 1}: zwp_linux_dmabuf_feedback_v1#13: tranche_done"
        check(r.returncode == 1 and len(out) == 2 and out[0].startswith(want)
              and out[1].endswith(" checked, 1 violations"),
              f"command line, bad log: exit {r.returncode}, " + " | ".join(out))

    # Speed: 100,000 lines of frames (commit, callback, release, delete_id).
    frame = PREFIX.strip("\n").split("\n")
    body = []
    while len(body) < 100000:
        body += ["@Q  -> wl_surface#12.frame(new id wl_callback#13)",
                 "@Q  -> wl_surface#12.damage_buffer(0, 0, 100, 100)",
                 "@Q  -> wl_surface#12.commit()",
                 "|libEGL debug: a line of something else",
                 "@D wl_display#1.delete_id(13)",
                 "@Q wl_callback#13.done(1234)"]
    big = stamp("\n".join(frame + body))
    t0 = time.monotonic()
    rb = pc.summary(big.splitlines(), xml)
    dt = time.monotonic() - t0
    check(not rb.violations and rb.events > 30000 and dt < 15,
          f"{len(big.splitlines())} lines: {rb.events} events on {rb.objects} objects in {dt:.2f} s, "
          f"{len(rb.violations)} violations")

    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
