#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The clipboard of syncbridge-wl-compositor, through wl-clipboard's stock programs.

    clipboard.py COMPOSITOR

Starts the compositor (CPU renderer) in a private XDG_RUNTIME_DIR, then:
  - wayland-info (where installed): the seat has the keyboard capability
    and wl_data_device_manager is version 3;
  - wl-copy RANDOM, then wl-paste --no-newline prints RANDOM: wl-copy's
    source became the selection while its surface had the keyboard focus,
    wl-paste's surface took the focus and got the selection as an offer,
    its receive reached wl-copy's send;
  - wl-paste's WAYLAND_DEBUG shows the keymap (format 1, XKB_V1, a non-empty
    fd) and a keyboard enter;
  - wl-paste --list-types lists text/plain;
  - wl-copy --clear: wl-paste then finds no selection (a failing exit);
  - wl-copy's and wl-paste's WAYLAND_DEBUG logs hold no event the protocol
    does not allow (protocol_check.py);
  - the compositor was alive until stopped and exits 0 on SIGINT.

  - the selection outlives the compositor's ping timeout (1 s here): a
    wl-paste 2.5 s after wl-copy still gets it. wl-clipboard (2.1) answers
    no xdg_wm_base.ping while it only serves the selection (no listener
    then); the compositor pings only clients with xdg_surfaces, so the
    background wl-copy stays (it pinged at bind and ended wl-copy 5 s in
    until issue 26's change).

Prints TAP-ish "ok - " / "not ok - " lines. Exit: 0 pass, 1 fail, 77 skip
(wl-copy / wl-paste not installed: Debian's wl-clipboard).
"""
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol_check  # noqa: E402  (beside this file)
import wlcomp  # noqa: E402
from wlcomp import check  # noqa: E402

SOCKET = "clip"


def run(rt, name, cmd, debug=False, timeout=20):
    """cmd against the compositor: (exit status, stdout); its stderr (with
    WAYLAND_DEBUG when debug) goes to rt/name.log. wl-copy forks a child
    that serves the selection and keeps stderr: a file, never a pipe we
    would wait on."""
    env = dict(os.environ, XDG_RUNTIME_DIR=rt, WAYLAND_DISPLAY=SOCKET)
    for k in ("DISPLAY", "WAYLAND_SOCKET"):
        env.pop(k, None)
    if debug:
        env["WAYLAND_DEBUG"] = "client"
    print("# " + " ".join(cmd), flush=True)
    with open(os.path.join(rt, name + ".log"), "w") as err:
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                               env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, b""
    return r.returncode, r.stdout


def read(rt, name):
    with open(os.path.join(rt, name + ".log"), errors="replace") as f:
        return f.read()


def tail(text, n=5):
    return "".join("#   " + line + "\n" for line in text.splitlines()[-n:])


def check_wayland_info(rt):
    if not shutil.which("wayland-info"):
        print("ok - wayland-info: the seat's keyboard # SKIP wayland-info not installed")
        return
    rc, out = run(rt, "wayland-info", ["wayland-info"])
    text = out.decode(errors="replace")
    caps = re.search(r"capabilities:([^\n]*)", text)
    check(rc == 0 and caps is not None and "keyboard" in caps.group(1).split(),
          "wayland-info: the seat has the keyboard capability (%s)" %
          (caps.group(1).strip() if caps else "no seat"))
    check(re.search(r"'wl_data_device_manager',\s+version:\s+3\b", text) is not None,
          "wayland-info: wl_data_device_manager version 3")


def check_protocol(rt, names):
    for name in names:
        bad = protocol_check.check(read(rt, name))
        check(not bad, "%s's WAYLAND_DEBUG: no event the protocol does not allow%s" %
              (name, "".join("\n#   %d: %s" % v for v in bad[:5])))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    for tool in ("wl-copy", "wl-paste"):
        if not shutil.which(tool):
            print("1..0 # SKIP %s not installed (Debian: wl-clipboard)" % tool)
            return 77
    rt = tempfile.mkdtemp(prefix="sb-clipboard-")
    os.chmod(rt, 0o700)
    cmd = [argv[1], "--socket", SOCKET, "--renderer=cpu", "--ping-timeout-ms", "1000"]
    comp, ready = wlcomp.start(cmd, rt, dict(os.environ, XDG_RUNTIME_DIR=rt), 30)
    try:
        if not check(ready, "the compositor is listening"):
            print(tail(read(rt, "compositor")), end="")
            return 1
        check_wayland_info(rt)

        text = "syncbridge-" + secrets.token_hex(8)
        rc, _ = run(rt, "wl-copy", ["wl-copy", text], debug=True)
        check(rc == 0, "wl-copy %s: exit %s" % (text, rc))
        rc, out = run(rt, "wl-paste", ["wl-paste", "--no-newline"], debug=True)
        got = out.decode(errors="replace")
        if not check(rc == 0 and got == text, "wl-paste --no-newline: %r, exit %s (wanted %r)" %
                     (got, rc, text)):
            print(tail(read(rt, "wl-paste")), end="")

        log = read(rt, "wl-paste")
        km = re.search(r"wl_keyboard[#@]\d+\.keymap\((\d+), fd \d+, (\d+)\)", log)
        check(km is not None and km.group(1) == "1" and int(km.group(2)) > 0,
              "wl-paste got the keymap: %s" % (km.group(0) if km else "no wl_keyboard.keymap"))
        check(re.search(r"wl_keyboard[#@]\d+\.enter\(", log) is not None,
              "wl-paste's surface got the keyboard focus (wl_keyboard.enter)")
        check(re.search(r"wl_data_device[#@]\d+\.selection\(wl_data_offer", log) is not None,
              "wl-paste got the selection as a wl_data_offer")

        time.sleep(2.5)  # past the compositor's 1 s ping timeout: wl-copy must still serve
        rc, out = run(rt, "wl-paste-late", ["wl-paste", "--no-newline"])
        got = out.decode(errors="replace")
        check(rc == 0 and got == text, "wl-paste 2.5 s later (ping timeout 1 s): %r, exit %s" % (got, rc))
        rc, out = run(rt, "wl-paste-types", ["wl-paste", "--list-types"])
        types = out.decode(errors="replace").split()
        check(rc == 0 and "text/plain" in types, "wl-paste --list-types: %s" % " ".join(types))

        rc, _ = run(rt, "wl-copy-clear", ["wl-copy", "--clear"])
        rc2, out = run(rt, "wl-paste-cleared", ["wl-paste", "--no-newline"])
        check(rc == 0 and rc2 not in (0, None) and out == b"",
              "after wl-copy --clear (exit %s) wl-paste finds no selection (exit %s, %r)" %
              (rc, rc2, out.decode(errors="replace")))

        check_protocol(rt, ["wl-copy", "wl-paste"])
        check(comp.poll() is None, "the compositor ran to the end")
    finally:
        crc = wlcomp.stop(comp, signal.SIGINT)[0]
    if not check(crc == 0, "the compositor exits 0 on SIGINT (%s)" % crc):
        print(tail(read(rt, "compositor")), end="")
    if not wlcomp.failed:
        shutil.rmtree(rt, ignore_errors=True)
    else:
        print("# logs in " + rt)
    return 1 if wlcomp.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
