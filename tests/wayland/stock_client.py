#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stock Wayland client (from Debian's packages) against syncbridge-wl-compositor.

    stock_client.py COMPOSITOR PNG_STATS [options] -- CLIENT [ARGS...]

Starts the compositor (its renderer draws the windows, screenshots every
--shot-every repaints), runs CLIENT for --seconds (or until it exits by
itself), stops it with SIGINT as a user would, then stops the compositor.
A client that has not made --min-commits commits by then, or whose window
has not been in a screenshot yet, runs on, up to --max-seconds in all: how
fast llvmpipe draws under TCG is not what is tested (weston-simple-dmabuf-egl
made 12 to 61 commits in 10 s, runs of the same build in the same guest).

Passes when:
  - the client exits with status 0 (weston clients on SIGINT, vkcube after
    --c N frames, wayland-info at once), and printed no protocol error,
    assertion, "not supported" or crash;
  - the compositor was alive until we stopped it and exits 0;
  - the client answered its xdg_wm_base pings (at least one, where it was
    sent two or more); a late answer is fine: the compositor only marks a
    client that is 5 s late not responding, as desktop compositors do;
  - it applied at least --min-commits commits with a buffer (its -v "used"
    lines), with --sync v1|syncobj at least that many through that protocol;
  - some screenshot taken while the client ran shows at least --min-pixels
    pixels that are not the background, in at least 2 colours (png-stats
    reads them with libpng, not with the compositor's code);
  - every --expect REGEX matches the client's output;
  - the client's WAYLAND_DEBUG log holds no event sequence the protocol XML
    does not allow (protocol_check.py: dma-buf feedback tranches, xdg-shell
    configure sequences, presentation feedback, callbacks, buffer releases,
    keyboard and data-device order, every event's name, arity and version);
    --no-protocol-check turns it off;
  - with --min-deferred N, the compositor helper held at least N commits
    until their acquire fence signalled (the compositor's exit line);
  - no buffer was used while its acquire fence was pending (the compositor's
    -v "used ... acquire=STATE" lines; under implicit sync the state at use
    of the dma-buf's write fences as they were at commit) — or, with --race
    (a control, with --comp-arg --no-wait --comp-env SYNCBRIDGE_DISABLE=1),
    at least one was.
With --proxy PROXY the client connects through syncbridge-wl-proxy
(docs/wl-proxy.md) instead, which must exit 0 on SIGTERM at the end: every
check above then holds through it.
@CARD@ / @RENDER@ in the client's arguments become the card / render node of
--card DRIVER;
--needs-virgl skips unless virtio_gpu has 3D (a GBM-capable render node).
Exit: 0 pass, 1 fail, 77 skip (the client or a device is missing).
"""
import argparse
import collections
import ctypes
import fcntl
import glob
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protocol_check  # noqa: E402  (beside this file)
import wlcomp  # noqa: E402
from wlcomp import check  # noqa: E402

SYNC = {"implicit": 0, "v1": 1, "syncobj": 2}
# "assertion ... failed" (C's assert, GLib's g_return_if_fail), not a build
# feature list such as foot's "version: 1.13.1 +pgo -assertions"
BAD = re.compile(r"protocol error|error in client communication|assertion\b.*\bfailed|not supported"
                 r"|Segmentation fault|Aborted|core dumped|wl_display@1: error", re.I)


def card_of(driver, pattern="card[0-9]*"):
    """The card (or render) node whose kernel driver is `driver` (a virtio GPU's is on its virtio child)."""
    for card in sorted(glob.glob("/sys/class/drm/" + pattern)):
        if "-" in os.path.basename(card):
            continue  # connectors
        dev = os.path.join(card, "device")
        for link in [os.path.join(dev, "driver")] + glob.glob(os.path.join(dev, "virtio*", "driver")):
            if os.path.islink(link) and os.path.basename(os.readlink(link)) == driver:
                return "/dev/dri/" + os.path.basename(card)
    return None


def has_virgl():
    """virtio_gpu with 3D: DRM_IOCTL_VIRTGPU_GETPARAM(VIRTGPU_PARAM_3D_FEATURES) says 1."""
    card = card_of("virtio_gpu")
    if not card:
        return False
    value = ctypes.c_uint32(0)
    # struct drm_virtgpu_getparam { __u64 param; __u64 value (a pointer) }
    arg = struct.pack("QQ", 1, ctypes.addressof(value))
    try:
        fd = os.open(card, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, 0xC0106443, arg)  # DRM_IOWR(0x40 + 0x03, 16 bytes)
        finally:
            os.close(fd)
    except OSError:
        return False
    return value.value == 1


def start_compositor(args, rt, shots):
    cmd = [args.compositor, "--socket", "stock", "-v",
           "--screenshot", shots, "--screenshot-every", str(args.shot_every)] + args.comp_arg
    env = dict(os.environ, XDG_RUNTIME_DIR=rt)
    env.update(kv.split("=", 1) for kv in args.comp_env)
    if args.min_deferred:
        # the library's trace markers, into a plain file (src/core/trace.c
        # opens it for writing: it must exist)
        open(os.path.join(rt, "markers"), "w").close()
        env.update(SYNCBRIDGE_TRACE="1", SYNCBRIDGE_TRACE_MARKER=os.path.join(rt, "markers"))
    return wlcomp.start(cmd, rt, env, 60)  # 60 s: GL start-up under emulation


def commits_used(args, clog):
    """The compositor's -v "used" lines, those through --sync's protocol if one is given."""
    used = [line for line in clog.splitlines() if line.startswith("used ")]
    if args.sync:
        return used, [line for line in used if line.endswith(f" sync={SYNC[args.sync]}")]
    return used, used


def enough_seen(args, rt):
    """--min-commits made, and the screenshot the pixel checks read taken.
    The run's length is what the checks need, not a guess: under TCG
    gtk4-widget-factory's first frame came 5.7-12.9 s after its start
    (12 runs, 2026-12-07), and a start past ~13.5 s left a 15 s run with
    under 10 repaints, so no screenshot (CI's failures of stops 43 and 46)."""
    with open(os.path.join(rt, "compositor.log"), errors="replace") as f:
        if len(commits_used(args, f.read())[1]) < args.min_commits:
            return False
    return not args.min_pixels or bool(glob.glob(os.path.join(rt, "shots", "frame-*.png")))


def run_client(args, rt):
    env = dict(os.environ, XDG_RUNTIME_DIR=rt,
               WAYLAND_DISPLAY="stock-proxy" if args.proxy else "stock")
    env.pop("DISPLAY", None)
    if args.protocol_check:
        env["WAYLAND_DEBUG"] = "client"
    env.update(kv.split("=", 1) for kv in args.client_env)
    print("# " + " ".join(args.client), flush=True)
    out = open(os.path.join(rt, "client.log"), "w")
    t0 = time.monotonic()
    # SIGINT as a terminal's Ctrl-C delivers it: the guest's batch runs us in
    # the background of a non-interactive shell, where SIGINT is ignored, and
    # an ignored signal stays ignored across exec (a client without its own
    # handler, gtk4-widget-factory, then never stopped).
    cl = subprocess.Popen(args.client, stdout=out, stderr=subprocess.STDOUT, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Its --seconds; then, short of --min-commits or of a screenshot (a slow
    # start or a slow stretch), on until it has them or --max-seconds in all.
    rc = None
    while rc is None and (time.monotonic() - t0 < args.seconds or
                          (time.monotonic() - t0 < args.max_seconds and
                           not enough_seen(args, rt))):
        try:
            rc = cl.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    if rc is not None:
        how = "exited by itself"
    else:
        rc, killed = wlcomp.stop(cl, signal.SIGINT, 15)
        how = "did not stop on SIGINT: killed" if killed else "stopped by SIGINT"
    out.close()
    with open(os.path.join(rt, "client.log"), errors="replace") as f:
        text = f.read()
    return rc, how, time.monotonic() - t0, text


def screenshots(args, shots, until):
    """png-stats of the screenshots written while the client ran:
    [(pixels, colours, name, [pixels near each --colour])]."""
    stats = []
    want = [c.split(":")[0] for c in args.colour]
    for path in sorted(glob.glob(os.path.join(shots, "frame-*.png"))):
        if os.path.getmtime(path) > until:
            continue
        r = subprocess.run([args.png_stats, path, "202020"] + want, capture_output=True, text=True)
        if r.returncode == 0:
            w, h, nonbg, distinct, *near = (int(v) for v in r.stdout.split())
            stats.append((nonbg, distinct, os.path.basename(path), near))
    return stats


def main(argv):
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument("compositor")
    p.add_argument("png_stats")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--min-commits", type=int, default=20)
    p.add_argument("--max-seconds", type=float, default=60,
                   help="how long the client may run on to make --min-commits")
    p.add_argument("--sync", choices=SYNC.keys())
    p.add_argument("--min-deferred", type=int, default=0)
    p.add_argument("--race", action="store_true",
                   help="the control: at least one buffer used while its acquire fence was pending")
    p.add_argument("--comp-env", action="append", default=[], help="VAR=VALUE for the compositor")
    p.add_argument("--min-pixels", type=int, default=1000)
    p.add_argument("--shot-every", type=int, default=10)
    p.add_argument("--card")
    p.add_argument("--needs-virgl", action="store_true")
    p.add_argument("--expect", action="append", default=[])
    p.add_argument("--forbid", action="append", default=[], metavar="REGEX",
                   help="the client's output must not match (e.g. validation messages)")
    p.add_argument("--comp-arg", action="append", default=[])
    p.add_argument("--proxy", help="run the client through this syncbridge-wl-proxy")
    p.add_argument("--keep", help="leave the screenshots and logs in this folder")
    p.add_argument("--colour", action="append", default=[], metavar="RRGGBB:MIN",
                   help="a screenshot shows at least MIN pixels near this colour (the client's content)")
    p.add_argument("--sigint-ok", action="store_true",
                   help="the client has no SIGINT handler: ended by our SIGINT is a clean end")
    p.add_argument("--client-env", action="append", default=[], help="VAR=VALUE for the client")
    p.add_argument("--no-protocol-check", dest="protocol_check", action="store_false",
                   help="no WAYLAND_DEBUG log, no protocol check")
    if "--" not in argv:
        p.print_usage()
        return 2
    sep = argv.index("--")
    args = p.parse_args(argv[1:sep])
    args.client = argv[sep + 1:]
    if not args.client or not shutil.which(args.client[0]):
        print(f"SKIP: {args.client[0] if args.client else 'no client'} is not installed")
        return 77
    if args.needs_virgl and not has_virgl():
        print(f"SKIP: {args.client[0]} allocates with GBM on the main device's render node, which "
              "refuses dumb buffers without virgl (MODE_CREATE_DUMB: EACCES); it runs in the virgl guest")
        return 77
    if args.card:
        card = card_of(args.card)
        if not card:
            print(f"SKIP: no {args.card} card node")
            return 77
        render = card_of(args.card, "renderD[0-9]*")
        args.client = [a.replace("@CARD@", card).replace("@RENDER@", render or "") for a in args.client]

    rt = tempfile.mkdtemp(prefix="sb-stock-")
    os.chmod(rt, 0o700)
    shots = os.path.join(rt, "shots")
    os.mkdir(shots)
    comp, ready = start_compositor(args, rt, shots)
    proxy = None
    try:
        if not check(ready, "the compositor started"):
            return 1
        if args.proxy:
            os.mkdir(os.path.join(rt, "proxy"))
            proxy, ready = wlcomp.start([args.proxy, "--socket", "stock-proxy"],
                                        os.path.join(rt, "proxy"),
                                        dict(os.environ, XDG_RUNTIME_DIR=rt, WAYLAND_DISPLAY="stock"), 30)
            if not check(ready, "syncbridge-wl-proxy started"):
                return 1
        rc, how, secs, text = run_client(args, rt)
        end = time.time()
        own = [line for line in text.splitlines() if not protocol_check.is_debug_line(line)]
        print("".join("# client: " + line + "\n" for line in own[-25:]), end="")
        alive = comp.poll() is None
    finally:
        if proxy:
            prc = wlcomp.stop(proxy, signal.SIGTERM)[0]
            check(prc == 0, f"syncbridge-wl-proxy exits 0 (status {prc})")
        crc = wlcomp.stop(comp, signal.SIGTERM)[0]
    with open(os.path.join(rt, "compositor.log"), errors="replace") as f:
        clog = f.read()
    used, through = commits_used(args, clog)
    print("".join("# compositor: " + line + "\n" for line in clog.splitlines()
                  if not line.startswith(("used ", "screenshot "))), end="")
    name = os.path.basename(args.client[0])

    ok_rc = rc == 0 or (args.sigint_ok and rc == -signal.SIGINT and how == "stopped by SIGINT")
    check(ok_rc, f"{name} {how} after {secs:.1f} s with status {rc}")
    # WAYLAND_DEBUG lines: checked below, not grepped
    bad = [line for line in text.splitlines() if BAD.search(line) and not protocol_check.is_debug_line(line)]
    check(not bad, f"{name} printed no protocol error, assertion or 'not supported'"
                   + (f" (got: {bad[0]!r})" if bad else ""))
    check(alive, "the compositor was alive until the client was done")
    check(crc == 0, f"the compositor exited with status {crc} on SIGTERM")
    # The compositor marks a client that leaves a ping unanswered for 5 s not
    # responding and keeps it, as desktop compositors do (gtk4-widget-factory
    # before its first frame under TCG, on a slow host, was that late); one
    # that never answers any of its pings is broken.
    m = re.search(r"(\d+) pings, (\d+) answered \(the longest wait (\d+) ms\)", clog)
    if m and int(m.group(1)) >= 2:
        sent, answered, longest = (int(g) for g in m.groups())
        check(answered >= 1, f"{name} answered {answered} of the {sent} pings sent to it "
                             f"(the longest wait {longest} ms)")
    if args.min_commits:
        check(len(used) >= args.min_commits,
              f"{len(used)} commits with a buffer applied (at least {args.min_commits})")
    if args.sync:
        n = len(through)
        check(n >= args.min_commits, f"{n} of them through {args.sync} (at least {args.min_commits})")
    # the compositor's witness: each use prints its acquire fence's state then
    pending = sum(1 for line in used if " acquire=pending " in line)
    fenced = sum(1 for line in used if " acquire=signalled " in line) + pending
    if args.race:
        check(pending >= 1, f"control: {pending} of {fenced} fenced buffers used while their acquire "
                            f"fence was pending (the race; at least 1)")
    else:
        check(pending == 0, f"no buffer used while its acquire fence was pending ({pending} of {fenced} "
                            f"fenced)")
    if args.min_deferred:
        m = re.search(r"(\d+) deferred for a fence", clog)
        n = int(m.group(1)) if m else 0
        check(n >= args.min_deferred, f"the compositor helper deferred {n} commits until their "
                                      f"acquire fence signalled (at least {args.min_deferred})")
        try:
            with open(os.path.join(rt, "markers"), errors="replace") as f:
                marks = f.read()
        except OSError:
            marks = ""
        deferred = len(re.findall(r"wl\.commit surface=\d+ result=deferred", marks))
        signalled = len(re.findall(r"wl\.acquire_signalled surface=\d+", marks))
        check(deferred >= args.min_deferred and signalled >= 1,
              f"trace markers: {deferred} 'wl.commit ... result=deferred', {signalled} "
              f"'wl.acquire_signalled'")
    if args.protocol_check:
        events, objects, _, violations = protocol_check.summary(text)
        check(events > 0 and not violations,
              f"protocol check of {name}'s WAYLAND_DEBUG log: {events} events on {objects} objects, "
              f"{len(violations)} violations" + "".join(f"\n#   line {n}: {m}" for n, m in violations[:10]))
    for rx in args.expect:
        check(re.search(rx, text, re.M) is not None, f"{name}'s output matches /{rx}/")
    for rx in args.forbid:
        hits = [line for line in text.splitlines() if re.search(rx, line)]
        check(not hits, f"{name}'s output has no /{rx}/ ({len(hits)} lines"
                        + (f": {hits[0][:200]!r})" if hits else ")"))
    if args.proxy and "--no-drm-syncobj" in args.comp_arg:
        # the compositor has no linux-drm-syncobj-v1: the client saw the proxy's own
        offered = re.search(r'wl_registry[@#]\d+\.global\(\d+, "wp_linux_drm_syncobj_manager_v1"', text)
        check(offered is not None, f"{name} was offered wp_linux_drm_syncobj_manager_v1 by the proxy")
    # Which globals the client bound (its WAYLAND_DEBUG log; libwayland 1.21
    # writes "@", 1.23 "#"): the sync protocol its WSI or toolkit chose is
    # among them.
    binds = sorted(set(re.findall(r'wl_registry[@#]\d+\.bind\(\d+, "(\w+)"', text)))
    print(f"# {name} bound: {', '.join(binds) if binds else '(none seen)'}")
    if "wp_linux_drm_syncobj_manager_v1" in binds:
        asked = collections.Counter(re.findall(r"-> wp_linux_drm_syncobj_\w+[@#]\d+\.(\w+)\(", text))
        print(f"# {name}'s linux-drm-syncobj requests: "
              + (", ".join(f"{n} {req}" for req, n in sorted(asked.items())) or "none"))
    if args.min_pixels:
        stats = screenshots(args, shots, end)
        best = max(stats, default=(0, 0, "none", []))
        check(best[0] >= args.min_pixels and best[1] >= 2,
              f"{len(stats)} screenshots while it ran; the fullest, {best[2]}, has {best[0]} "
              f"pixels in {best[1]} colours other than the background "
              f"(at least {args.min_pixels} in 2)")
        for i, spec in enumerate(args.colour):
            rgb, least = spec.split(":")
            shot = max(stats, key=lambda st: st[3][i], default=(0, 0, "none", [0] * len(args.colour)))
            check(shot[3][i] >= int(least),
                  f"the client's own content: {shot[3][i]} pixels near #{rgb} in {shot[2]} "
                  f"(at least {least})")
    if wlcomp.failed:
        # What the client last said and heard, for a failure seen once in a
        # batch (CI prints this output only; gtk4-widget-factory's late start
        # took three CI runs to explain without it: docs/testing.md).
        dbg = [line for line in text.splitlines() if protocol_check.is_debug_line(line)]
        print(f"# the client's protocol log, the last 40 of {len(dbg)} lines:")
        print("".join("#   " + line + "\n" for line in dbg[-40:]), end="")
        print("".join("# compositor: " + line + "\n" for line in used[-8:]), end="")
        # the guest batch's per-test folder on the host (scripts/vm/guest/batch.sh)
        if not args.keep and os.environ.get("SB_TEST_KEEP_DIR"):
            args.keep = os.environ["SB_TEST_KEEP_DIR"]
    if args.keep:
        shutil.rmtree(args.keep, ignore_errors=True)
        shutil.copytree(rt, args.keep)
        print(f"# kept in {args.keep}")
    shutil.rmtree(rt, ignore_errors=True)
    return 1 if wlcomp.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
