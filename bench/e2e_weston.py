#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Figure 7 (docs/performance.md): stock clients end to end, our compositor vs Weston
(or, --anchor kwin, figure 7c: vs KWin).

    bench-e2e-weston [--rounds R] [--dmabuf-seconds S] [--vkcube-seconds S]
                     [--frames F] [--clients LIST] [--keep DIR]
                     [--compositor PATH] [--client PATH] [--gpu-wait-too]
                     [--anchor weston|kwin] [--in-trixie PATH]

syncbridge-wl-compositor and Weston 14 (`weston --backend=headless
--renderer=gl --shell=kiosk`) are started once, side by side, each on its own
socket, both 1024x640 at 60 Hz, and stay up for the whole run (one guest
boot). Each client first runs once against each compositor to its third
frame, not counted (warm-up: first use of shaders and caches). Then, for R
rounds (default 3), each client runs once against each compositor,
the two runs next to each other (ours first in even rounds, Weston first in
odd ones: A B B A), with the same arguments:

  simple-dmabuf-egl  weston-simple-dmabuf-egl -d RENDER_NODE (Mesa virgl in the
                     GPU guest: explicit-sync v1 acquire fences from virgl's EGL),
                     --dmabuf-seconds (7) per run, then SIGINT;
  vkcube             vkcube-wayland (lavapipe, its WSI presents over wl_shm),
                     --vkcube-seconds (12) per run, then SIGINT;
  latency            syncbridge-wl-client --timing: F (25) frames, each a virtio_gpu
                     dumb buffer with a pending vgem acquire fence (explicit-sync
                     v1), signalled 20 ms after the commit; wp_presentation
                     feedback requested for every frame.

frames/s (the stock clients): the client's own WAYLAND_DEBUG=client log, the
same counter for both compositors: every wl_surface.commit that follows a
wl_surface.attach of a buffer is a frame, at the time libwayland printed the
request; a run's frames/s is (frames - 1) / (last frame - first frame), so the
client's start-up (before its first frame) is left out. The pooled figure is
all intervals over all their time; the intervals give median and p90.

latency (the project client, per frame, from the client's clock read just
before it signals the vgem fence, in wp_presentation's clock):
  stamp         the presented timestamp the compositor reports;
  presented_rx  when the presented event reached the client;
  done_rx       when the frame callback reached the client.
Frame 0 of every run is left out (first use of a new surface).

compositor CPU: each compositor's CPU time during each run (every thread,
/proc/PID/task/*/schedstat), per frame the client made in that run; in the
guest both compositors share two vCPUs with the client, so CPU one of them
spends per frame is CPU the client does not get.

Every run is listed; the pooled figures are ratios ours / Weston of medians
and p90s, and of frames/s, with each round's ratio for the spread. Nothing is
asserted about the figures: a run fails only when its client fails (exit
status, a protocol error, no frame).

--gpu-wait-too: a third compositor in every round, ours with --gpu-wait
(SB_WL_SERVER_WAIT_MATERIALIZED: a commit is applied once its fence exists,
the GL copy waits for it on the GPU, "presented" waits for the repaint's
fence), printed as "gpuwait" with its ratios to ours (CPU wait) and Weston.
The rounds then go A B C, C B A, A B C.

--anchor kwin: the anchor is KWin 6.3 from the Debian 13 root instead of
Weston (`kwin_wayland --virtual`, through scripts/vm/in-trixie.sh, shown only
virtio_gpu's nodes, on a dbus-daemon of its own; the root from
SYNCBRIDGE_TRIXIE_ROOT or scripts/setup.sh's venus root). KWin has
linux-drm-syncobj-v1 and not explicit-sync v1, so then ours offers both and
the latency client uses linux-drm-syncobj-v1 (acquire points holding the
pending vgem fences) on both; weston-simple-dmabuf-egl, which knows only v1,
uses it on ours and implicit sync on KWin. KWin's CPU is its kwin_wayland
process's (found in the wrapper's session).

Needs root, vgem, the virgl GPU guest (SYNCBRIDGE_VM_GPU=virgl; run by
scripts/run-bench.sh as `e2e-weston`), weston, weston-simple-dmabuf-egl and
vkcube-wayland. Exit: 0, 1 when a run failed, 77 when something is missing.
"""
import argparse
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

HERE = os.path.dirname(os.path.realpath(__file__))
OUTPUT = "1024x640"  # both compositors; vkcube's 500x500 must fit Weston kiosk's fullscreen state

# ---- parsers (tests/wayland/e2e_parse_test.py runs them on canned logs) ----------------

# libwayland's WAYLAND_DEBUG line: "[%7u.%03u] " (CLOCK_REALTIME in microseconds,
# truncated to 32 bits: it wraps every ~71.6 minutes), "{queue} " (1.23), then
# " -> " for a request, "discarded " for an event nobody listened to.
DEBUG_LINE = re.compile(r"^\[\s*(\d+)\.(\d{3})\]\s+(?:\{[^}]*\}\s+)?(discarded\s+)?(->\s+)?"
                        r"([A-Za-z_0-9]+)#(\d+)\.([A-Za-z_0-9]+)\((.*)\)\s*$")
WRAP_US = 1 << 32


def parse_debug_log(text):
    """Frames of a client's WAYLAND_DEBUG=client log.

    Returns a dict: frames (microsecond times, unwrapped, of each commit that
    follows an attach of a buffer on the same surface), acquire (commits among
    them that carried a zwp_linux_surface_synchronization_v1.set_acquire_fence),
    errors (wl_display.error events, as printed).
    """
    frames, errors = [], []
    acquire = 0
    attached = {}  # wl_surface id -> a buffer attached since its last commit
    fenced = False  # a set_acquire_fence since the last frame (one surface per client here)
    last = None
    base = 0
    for line in text.splitlines():
        m = DEBUG_LINE.match(line)
        if not m:
            continue
        t = int(m.group(1)) * 1000 + int(m.group(2)) + base
        if last is not None and t < last - WRAP_US // 2:
            base += WRAP_US
            t += WRAP_US
        last = t
        request = m.group(4) is not None
        iface, oid, msg, args = m.group(5), int(m.group(6)), m.group(7), m.group(8)
        if request and iface == "wl_surface" and msg == "attach":
            attached[oid] = not args.startswith("nil")
        elif request and iface == "zwp_linux_surface_synchronization_v1" and msg == "set_acquire_fence":
            fenced = True
        elif request and iface == "wl_surface" and msg == "commit":
            if attached.pop(oid, False):
                frames.append(t)
                acquire += fenced
                fenced = False
        elif not request and iface == "wl_display" and msg == "error":
            errors.append(args)
    return {"frames": frames, "acquire": acquire, "errors": errors}


TIMING_LINE = re.compile(r"^timing: frame=(\d+) stamp_us=(-?\d+) presented_rx_us=(-?\d+) "
                         r"done_rx_us=(-?\d+)\s*$")
LATENCY_KEYS = ("stamp", "presented_rx", "done_rx")


def parse_timing(text):
    """syncbridge-wl-client --timing lines: [{frame, stamp, presented_rx, done_rx}] (us)."""
    out = []
    for line in text.splitlines():
        m = TIMING_LINE.match(line)
        if m:
            out.append(dict(zip(("frame",) + LATENCY_KEYS, (int(g) for g in m.groups()))))
    return out


def pct(values, p):
    """Nearest rank, as bench/wake_stats.c: the smallest value with >= p% at or below it."""
    if not values:
        return 0
    v = sorted(values)
    rank = min(max(int(p / 100.0 * len(v) + 0.999999), 1), len(v))
    return v[rank - 1]


def intervals(frames):
    return [b - a for a, b in zip(frames, frames[1:])]


def ratio(a, b):
    return a / b if b else float("nan")


# ---- the guest's devices ----------------------------------------------------------------

def node_of(driver, pattern):
    """The /dev/dri node (card or render) whose kernel driver is `driver` (as stock_client.py)."""
    for node in sorted(glob.glob("/sys/class/drm/" + pattern)):
        if "-" in os.path.basename(node):
            continue
        dev = os.path.join(node, "device")
        for link in [os.path.join(dev, "driver")] + glob.glob(os.path.join(dev, "virtio*", "driver")):
            if os.path.islink(link) and os.path.basename(os.readlink(link)) == driver:
                return "/dev/dri/" + os.path.basename(node)
    return None


def has_virgl(card):
    """DRM_IOCTL_VIRTGPU_GETPARAM(VIRTGPU_PARAM_3D_FEATURES) == 1 (as stock_client.py)."""
    value = ctypes.c_uint32(0)
    try:
        fd = os.open(card, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, 0xC0106443, struct.pack("QQ", 1, ctypes.addressof(value)))
        finally:
            os.close(fd)
    except OSError:
        return False
    return value.value == 1


# ---- the compositors ---------------------------------------------------------------------

class Compositor:
    def __init__(self, name, socket, rt):
        self.name, self.socket, self.rt = name, socket, rt
        self.log = os.path.join(rt, name + ".log")
        self.proc = None
        self.info = ""
        self.cpu_pid = None  # whose CPU counts (default: proc's)
        self.group = False   # proc leads a session: stop the whole group
        self.helpers = []    # processes stopped with it (a bus)

    def pid(self):
        return self.cpu_pid or self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if not self.proc:
            return None
        if self.proc.poll() is None:
            if self.group:
                os.killpg(self.proc.pid, signal.SIGTERM)
            else:
                self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            if self.group:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
            rc = self.proc.wait()
        for h in self.helpers:
            h.terminate()
            h.wait()
        return rc


def cpu_ns(pid):
    """CPU time of every thread of a process so far, in ns (/proc/PID/task/*/schedstat)."""
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return total


def wait_for(pred, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def start_ours(path, rt, name="ours", extra=()):
    c = Compositor(name, "sb-e2e-" + name, rt)
    ready = os.path.join(rt, name + ".ready")
    fd = os.open(ready, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    # explicit-sync v1 only, as Weston: the clients here use nothing else
    # (against KWin the latency client uses linux-drm-syncobj-v1: both, then).
    cmd = [path, "--socket", c.socket, "--size", OUTPUT, "--ready-fd", str(fd)]
    cmd += list(extra)
    c.proc = subprocess.Popen(cmd, stdout=open(c.log, "w"), stderr=subprocess.STDOUT,
                              pass_fds=(fd,), env=dict(os.environ, XDG_RUNTIME_DIR=rt))
    os.close(fd)
    ok = wait_for(lambda: os.path.getsize(ready) > 0 or not c.alive(), 120) and c.alive()
    m = re.search(r"listening on \S+ \((.*)\)", read(c.log))
    c.info = m.group(1) if m else read(c.log).strip()[:200]
    return c, ok


def start_weston(rt):
    c = Compositor("weston", "sb-e2e-weston", rt)
    w, h = OUTPUT.split("x")
    cmd = ["weston", "--backend=headless", "--renderer=gl", "--shell=kiosk", "--socket=" + c.socket,
           "--idle-time=0", "--width=" + w, "--height=" + h, "--log=" + c.log]
    c.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, XDG_RUNTIME_DIR=rt))
    ok = wait_for(lambda: not c.alive() or (os.path.exists(os.path.join(rt, c.socket))
                                            and "explicit sync:" in read(c.log)), 180) and c.alive()
    log = read(c.log)
    gl = re.search(r"GL renderer: (.*)", log)
    c.info = "renderer: gl ({}), explicit sync: {}, presentation clock: {}".format(
        gl.group(1).strip() if gl else "?",
        "yes" if "explicit sync: yes" in log else "no",
        (re.search(r"presentation clock: (\S+)", log) or [None, "?"])[1].rstrip(","))
    return c, ok


def start_kwin(rt, in_trixie):
    c = Compositor("kwin", "sb-e2e-kwin", rt)
    w, h = OUTPUT.split("x")
    bus = "unix:path=" + os.path.join(rt, "bus")
    c.helpers.append(subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile",
                                       "--address=" + bus], stdout=subprocess.DEVNULL))
    wait_for(lambda: os.path.exists(os.path.join(rt, "bus")), 10)
    env = dict(os.environ, XDG_RUNTIME_DIR=rt, DBUS_SESSION_BUS_ADDRESS=bus,
               SYNCBRIDGE_TRIXIE_DRI="virtio_gpu")
    for k in ("WAYLAND_DISPLAY", "DISPLAY"):
        env.pop(k, None)
    cmd = [in_trixie, "/usr/bin/kwin_wayland", "--virtual", "--socket", c.socket, "--width", w,
           "--height", h, "--no-lockscreen", "--no-global-shortcuts"]
    c.proc = subprocess.Popen(cmd, stdout=open(c.log, "w"), stderr=subprocess.STDOUT, env=env,
                              start_new_session=True)
    c.group = True
    ok = wait_for(lambda: not c.alive() or os.path.exists(os.path.join(rt, c.socket)), 180)

    # KWin makes its socket before its OpenGL backend is up and adds the
    # dma-buf and syncobj globals with it (tests/wayland/syncobj-peer.sh).
    def globals_up():
        p = subprocess.run([in_trixie, "/usr/bin/wayland-info"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60,
                           env=dict(env, WAYLAND_DISPLAY=c.socket))
        c.info = "linux-drm-syncobj-v1: {}".format(
            "yes" if "wp_linux_drm_syncobj_manager_v1" in p.stdout else "no")
        return "zwp_linux_dmabuf_v1" in p.stdout or not c.alive()
    ok = ok and c.alive() and wait_for(globals_up, 120) and c.alive()
    # Its CPU: the kwin_wayland process below the wrapper (unshare, chroot).
    parent, comm = {}, {}
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/stat") as f:
                st = f.read()
            pid = int(os.path.basename(d))
            comm[pid] = st[st.index("(") + 1:st.rindex(")")]
            parent[pid] = int(st[st.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
    for pid, name in comm.items():
        up = pid
        while name == "kwin_wayland" and up > 1 and up != c.proc.pid:
            up = parent.get(up, 1)
        if name == "kwin_wayland" and up == c.proc.pid:
            c.cpu_pid = pid
    if not c.cpu_pid:
        ok = False
        c.info += "; no kwin_wayland process found"
    return c, ok


# ---- one run -----------------------------------------------------------------------------

def client_env(comp, debug):
    env = dict(os.environ, XDG_RUNTIME_DIR=comp.rt, WAYLAND_DISPLAY=comp.socket)
    env.pop("DISPLAY", None)
    if debug:
        env["WAYLAND_DEBUG"] = "client"
    return env


def run_stock(comp, argv, seconds, logbase, until_frames=0):
    """Run a stock client for `seconds` (or, with until_frames, until it made that many
    frames, at most `seconds`), stop it with SIGINT; its frames from WAYLAND_DEBUG."""
    err = logbase + ".debug"
    out = logbase + ".out"
    with open(out, "w") as fo, open(err, "w") as fe:
        # SIGINT at its default: a program started in the background by a
        # non-interactive shell (the guest's batch runner) inherits it ignored,
        # and vkcube, which has no handler, would then run until killed.
        p = subprocess.Popen(argv, stdout=fo, stderr=fe, env=client_env(comp, True),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        end = time.monotonic() + seconds
        try:
            if until_frames:
                while (time.monotonic() < end and p.poll() is None
                       and len(parse_debug_log(read(err))["frames"]) < until_frames):
                    time.sleep(0.5)
            rc = p.wait(timeout=max(end - time.monotonic(), 0) if not until_frames else 0)
            how = "exited by itself"
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                rc = p.wait(timeout=15)
                how = "stopped by SIGINT"
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
                how = "killed"
    res = parse_debug_log(read(err))
    fr = res["frames"]
    res["seconds"] = (fr[-1] - fr[0]) / 1e6 if len(fr) > 1 else 0.0
    res["intervals"] = intervals(fr)
    res["fps"] = len(res["intervals"]) / res["seconds"] if res["seconds"] > 0 else 0.0
    # weston clients exit 0 on SIGINT; vkcube has no handler and dies of it
    problems = []
    if rc not in (0, -signal.SIGINT) or how == "killed":
        problems.append(f"{how}, status {rc}")
    if res["errors"]:
        problems.append("protocol error " + res["errors"][0])
    if len(fr) < 2:
        problems.append(f"{len(fr)} frames")
    if not comp.alive():
        problems.append(f"{comp.name} died")
    res["problems"] = problems
    return res


def run_latency(comp, client, frames, logbase, proto="v1"):
    argv = [client, "--frames", str(frames), "--render-ms", "20", "--buffers", "virtio_gpu",
            "--expect", proto, "--strict", "--timing"]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=client_env(comp, False), timeout=120)
    with open(logbase + ".out", "w") as f:
        f.write(p.stdout)
    samples = [s for s in parse_timing(p.stdout) if s["frame"] > 0]
    problems = []
    if p.returncode != 0:
        tail = [l for l in p.stdout.splitlines() if l.startswith("client:") and "frame" not in l]
        problems.append(f"status {p.returncode}" + (f" ({tail[-1]})" if tail else ""))
    if len(samples) < frames - 1:
        problems.append(f"{len(samples)} of {frames - 1} frames timed")
    if not comp.alive():
        problems.append(f"{comp.name} died")
    return {"samples": samples, "problems": problems}


# ---- report ------------------------------------------------------------------------------

def ms(us):
    return f"{us / 1000:8.2f} ms"


def print_figure(name, ours, weston, floor="weston"):
    """The shape of bench/wake_stats.c's lines, with Weston in the floor's place (values in us)."""
    m, p, wm, wp = pct(ours, 50), pct(ours, 90), pct(weston, 50), pct(weston, 90)
    print(f"{name:<28} n={len(ours):<4} median {ms(m)}  p90 {ms(p)} | {floor}: n={len(weston):<4} "
          f"median {ms(wm)}  p90 {ms(wp)} | ratio: median {ratio(m, wm):.3f}  p90 {ratio(p, wp):.3f}")


def spread(rounds):
    rs = [r for r in rounds if r == r]
    if not rs:
        return ""
    return f" | rounds {' '.join(f'{r:.3f}' for r in rs)} (spread {min(rs):.3f}..{max(rs):.3f})"


def main(argv):
    ap = argparse.ArgumentParser(description="figure 7: stock clients, our compositor vs Weston 14")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dmabuf-seconds", type=float, default=7)
    ap.add_argument("--vkcube-seconds", type=float, default=12)
    ap.add_argument("--frames", type=int, default=25, help="latency client frames per run")
    ap.add_argument("--clients", default="simple-dmabuf-egl,vkcube,latency")
    ap.add_argument("--keep", help="copy every log here")
    build = os.path.dirname(HERE)
    ap.add_argument("--compositor", default=os.path.join(build, "compositor/syncbridge-wl-compositor"))
    ap.add_argument("--client", default=os.path.join(build, "examples/wayland/syncbridge-wl-client"))
    ap.add_argument("--gpu-wait-too", action="store_true",
                    help="a third compositor: ours with --gpu-wait")
    ap.add_argument("--anchor", choices=("weston", "kwin"), default="weston",
                    help="the compositor ours is measured against")
    ap.add_argument("--in-trixie", default=os.path.join(os.path.dirname(build), "scripts/vm/in-trixie.sh"),
                    help="scripts/vm/in-trixie.sh (--anchor kwin)")
    args = ap.parse_args(argv[1:])
    clients = args.clients.split(",")
    sys.stdout.reconfigure(line_buffering=True)

    A = args.anchor
    missing = [p for p in ("weston-simple-dmabuf-egl", "vkcube-wayland") if not shutil.which(p)]
    missing += [p for p in (args.compositor, args.client) if not os.access(p, os.X_OK)]
    if A == "weston":
        missing += [p for p in ("weston",) if not shutil.which(p)]
    else:
        missing += [p for p in ("dbus-daemon",) if not shutil.which(p)]
        missing += [p for p in (args.in_trixie,) if not os.access(p, os.X_OK)]
        root = os.environ.get("SYNCBRIDGE_TRIXIE_ROOT") or os.path.join(
            os.environ.get("SYNCBRIDGE_CACHE") or os.path.join(
                os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "syncbridge"),
            "venus-root")
        if not os.access(root + "/usr/bin/kwin_wayland", os.X_OK):
            missing.append(root + "/usr/bin/kwin_wayland (scripts/setup.sh installs kwin-wayland)")
        os.environ["SYNCBRIDGE_TRIXIE_ROOT"] = root
    proto = "v1" if A == "weston" else "syncobj"
    if missing:
        print("SKIP: missing " + ", ".join(missing))
        return 77
    render = node_of("virtio_gpu", "renderD[0-9]*")
    card = node_of("virtio_gpu", "card[0-9]*")
    if not render or not card or not has_virgl(card):
        print("SKIP: needs virtio_gpu with virgl (the GPU guest: SYNCBRIDGE_VM_GPU=virgl)")
        return 77
    stock = {
        "simple-dmabuf-egl": (["weston-simple-dmabuf-egl", "-d", render], args.dmabuf_seconds),
        "vkcube": (["vkcube-wayland"], args.vkcube_seconds),
    }

    # KWin's runtime folder must be one both roots see (in-trixie.sh binds /run/user/0).
    if A == "kwin":
        os.makedirs("/run/user/0", exist_ok=True)
    rt = tempfile.mkdtemp(prefix="sb-e2e-", dir="/run/user/0" if A == "kwin" else None)
    os.chmod(rt, 0o700)
    t0 = time.monotonic()
    v1_only = ["--no-drm-syncobj"] if proto == "v1" else []
    ours, ok_o = start_ours(args.compositor, rt, extra=v1_only)
    weston, ok_w = start_weston(rt) if A == "weston" else start_kwin(rt, args.in_trixie)
    comps = [ours, weston]
    if args.gpu_wait_too:
        gpuwait, ok_g = start_ours(args.compositor, rt, "gpuwait", ["--gpu-wait"] + v1_only)
        comps.append(gpuwait)
        ok_w = ok_w and ok_g
    names = [c.name for c in comps]
    anchor_name = "Weston 14 headless" if A == "weston" else "KWin 6.3 --virtual"
    print(f"figure 7: stock clients end to end, ours vs {anchor_name}, {args.rounds} rounds "
          f"({'A B B A' if len(comps) == 2 else 'A B C C B A'}), one guest boot; compositors up after "
          f"{time.monotonic() - t0:.1f} s")
    for c in comps:
        print(f"  {c.name + ':':<8}{c.info}")
    if not ok_o or not ok_w:
        print("FAIL: a compositor did not start")
        for c in comps:
            print("".join(f"  {c.name}: {l}\n" for l in read(c.log).splitlines()[-15:]), end="")
        for c in comps:
            c.stop()
        return 1

    # Warm-up, not counted: each client once against each compositor, until its
    # third frame (first use of the clients' and the compositors' shaders, the
    # guest's page cache and Mesa's shader cache).
    t1 = time.monotonic()
    for name in clients:
        for comp in comps:
            base = os.path.join(rt, f"warmup-{name}-{comp.name}")
            if name == "latency":
                res = run_latency(comp, args.client, 3, base, proto)
            else:
                res = run_stock(comp, stock[name][0], 40, base, until_frames=3)
            if res["problems"]:
                print(f"  warm-up {comp.name:<6} {name}: {'; '.join(res['problems'])}")
    print(f"  (warm-up: each client to its third frame on each compositor, {time.monotonic() - t1:.1f} s)")

    fps = {c: {n: [] for n in names} for c in stock}
    lat = {k: {n: [] for n in names} for k in LATENCY_KEYS}
    lat_runs = {n: [] for n in names}
    lat_cpu = {n: 0.0 for n in names}
    failures = 0
    for r in range(args.rounds):
        order = comps if r % 2 == 0 else comps[::-1]
        for name in clients:
            for comp in order:
                base = os.path.join(rt, f"r{r}-{name}-{comp.name}")
                cpu0 = cpu_ns(comp.pid())
                if name == "latency":
                    res = run_latency(comp, args.client, args.frames, base, proto)
                    res["cpu_ms"] = (cpu_ns(comp.pid()) - cpu0) / 1e6
                    lat_cpu[comp.name] += res["cpu_ms"]
                    s = res["samples"]
                    lat_runs[comp.name].append(s)
                    for k in LATENCY_KEYS:
                        lat[k][comp.name] += [x[k] for x in s]
                    print(f"  round {r + 1} {comp.name:<6} latency: {len(s)} frames, median stamp "
                          f"{pct([x['stamp'] for x in s], 50) / 1000:.2f} ms, presented_rx "
                          f"{pct([x['presented_rx'] for x in s], 50) / 1000:.2f} ms, done_rx "
                          f"{pct([x['done_rx'] for x in s], 50) / 1000:.2f} ms; "
                          f"{comp.name} CPU {res['cpu_ms']:.0f} ms")
                else:
                    cmd, secs = stock[name]
                    res = run_stock(comp, cmd, secs, base)
                    res["cpu_ms"] = (cpu_ns(comp.pid()) - cpu0) / 1e6
                    fps[name][comp.name].append(res)
                    sync = f", {res['acquire']} with an acquire fence" if name == "simple-dmabuf-egl" else ""
                    print(f"  round {r + 1} {comp.name:<6} {name}: {len(res['frames'])} frames, "
                          f"{res['fps']:.2f} frames/s over {res['seconds']:.2f} s{sync}; {comp.name} CPU "
                          f"{res['cpu_ms']:.0f} ms, {res['cpu_ms'] / max(len(res['frames']), 1):.2f} ms/frame")
                if res["problems"]:
                    failures += 1
                    print(f"  round {r + 1} {comp.name:<6} {name}: FAILED: {'; '.join(res['problems'])}")
    print(f"(runs done after {time.monotonic() - t0:.1f} s)")

    for name in stock:
        if name not in clients:
            continue
        o, w = fps[name]["ours"], fps[name][A]
        pooled = {}
        for side, runs in (("ours", o), (A, w)):
            n = sum(len(x["intervals"]) for x in runs)
            secs = sum(x["seconds"] for x in runs)
            pooled[side] = n / secs if secs > 0 else 0.0
        rounds = [ratio(a["fps"], b["fps"]) for a, b in zip(o, w)]
        print(f"{name + ' frames/s':<28} ours {pooled['ours']:.2f} | {A} {pooled[A]:.2f} | "
              f"ratio {ratio(pooled['ours'], pooled[A]):.3f}{spread(rounds)}")
        print("{:<28} runs ours: {}; {}: {}".format(
            "", ", ".join("%.2f" % x["fps"] for x in o), A, ", ".join("%.2f" % x["fps"] for x in w)))
        print_figure(name + " frame interval", sum((x["intervals"] for x in o), []),
                     sum((x["intervals"] for x in w), []), A)
        cpf = {side: sum(x["cpu_ms"] for x in runs) / max(sum(len(x["frames"]) for x in runs), 1)
               for side, runs in (("ours", o), (A, w))}
        print(f"{name + ' compositor CPU':<28} ours {cpf['ours']:.2f} ms/frame | {A} "
              f"{cpf[A]:.2f} ms/frame | ratio {ratio(cpf['ours'], cpf[A]):.3f}")
    if "gpuwait" in names:
        # The GPU-wait mode against ours (CPU wait) and against Weston.
        for name in stock:
            if name not in clients:
                continue
            g, o, w = (fps[name][n] for n in ("gpuwait", "ours", A))
            pooled = {n: (sum(len(x["intervals"]) for x in runs) / sum(x["seconds"] for x in runs)
                          if sum(x["seconds"] for x in runs) > 0 else 0.0)
                      for n, runs in (("gpuwait", g), ("ours", o), (A, w))}
            print(f"{name + ' frames/s':<28} gpuwait {pooled['gpuwait']:.2f} | ratio to ours "
                  f"{ratio(pooled['gpuwait'], pooled['ours']):.3f}, to {A} "
                  f"{ratio(pooled['gpuwait'], pooled[A]):.3f}")
        if "latency" in clients:
            for k in LATENCY_KEYS:
                print_figure("gpuwait vs ours: " + k, lat[k]["gpuwait"], lat[k]["ours"], "ours")
                print(f"{'':<28} gpuwait / {A} median "
                      f"{ratio(pct(lat[k]['gpuwait'], 50), pct(lat[k][A], 50)):.3f}")
            n = args.frames * args.rounds
            print(f"{'latency compositor CPU':<28} gpuwait {lat_cpu['gpuwait'] / n:.2f} ms/frame | "
                  f"ratio to ours {ratio(lat_cpu['gpuwait'], lat_cpu['ours']):.3f}")
    if "latency" in clients:
        for k in LATENCY_KEYS:
            print_figure("latency signal->" + k, lat[k]["ours"], lat[k][A], A)
        rounds = [ratio(pct([x["stamp"] for x in a], 50), pct([x["stamp"] for x in b], 50))
                  for a, b in zip(lat_runs["ours"], lat_runs[A])]
        print(f"{'latency stamp, per round':<28} median ratio{spread(rounds)}")
        n = args.frames * args.rounds
        print(f"{'latency compositor CPU':<28} ours {lat_cpu['ours'] / n:.2f} ms/frame | {A} "
              f"{lat_cpu[A] / n:.2f} ms/frame | ratio {ratio(lat_cpu['ours'], lat_cpu[A]):.3f}")
        early = sum(1 for side in lat_runs.values() for run in side for x in run if x["stamp"] < 0)
        if early:
            print(f"  {early} presented timestamps before the signal (events after it: the "
                  "compositor's clock, docs/wayland.md)")

    for c in comps[2:]:
        c.stop()
    rc_o, rc_w = ours.stop(), weston.stop()
    last = [l for l in read(ours.log).splitlines() if l.startswith("compositor:")]
    if last:
        print("  ours at exit: " + last[-1])
    if args.keep:
        shutil.rmtree(args.keep, ignore_errors=True)
        shutil.copytree(rt, args.keep, ignore=shutil.ignore_patterns("sb-e2e-*"))
        print(f"  logs kept in {args.keep}")
    shutil.rmtree(rt, ignore_errors=True)
    if failures:
        print(f"FAIL: {failures} runs failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
