#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doctor's Wayland and PipeWire probes on any Linux machine (host tier).

    doctor_probe_test.py CASE DOCTOR_PROBE [COMPOSITOR]

The probes' JSON comes from doctor_cmd(): today the test driver
(tests/info/doctor_probe.c); once `syncbridge-info doctor` is merged, that
one line becomes its `doctor --json` and the checks stay.

CASE:
  wl-unset           WAYLAND_DISPLAY and WAYLAND_SOCKET unset: asked false, why said
  wl-no-runtime-dir  a relative WAYLAND_DISPLAY without XDG_RUNTIME_DIR: asked, not
                     connected, why names XDG_RUNTIME_DIR (libwayland refuses it too)
  wl-silent          a socket that accepts and never answers, by absolute path and as
                     WAYLAND_SOCKET: given up after the timeout, its owner named
  wl-ours            our compositor (COMPOSITOR, a child): connected, its process named,
                     explicit-sync v1 v2, linux-dmabuf v3+, linux-drm-syncobj as it says
  wl-ours-syncobj    (GPU guest) the same with linux-drm-syncobj-v1 there; the control
                     --no-drm-syncobj: syncobj_v1 0; --no-explicit-v1: explicit_v1 0
  pw-daemon          a private PipeWire daemon: running, versions, sync_timeline 1
  pw-none            no daemon (the control): running false, sync_timeline -1
  pw-silent          a socket that never answers as pipewire-0: cut off at the timeout
  pw-rule            the version rule (1.2+, 1.1.81+, 1.0.8+ on both ends)
Exit: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from common import SKIP, check, finish

TIMEOUT_MS = 500


def doctor_cmd(probe):
    """The one command whose JSON is checked (see the docstring)."""
    return [probe, "--timeout-ms", str(TIMEOUT_MS), "all"]


def doctor(probe, env, extra_fds=()):
    """Run the probes in env; returns (document, seconds)."""
    t0 = time.monotonic()
    r = subprocess.run(doctor_cmd(probe), env=env, capture_output=True, text=True, timeout=20,
                       pass_fds=extra_fds)
    dt = time.monotonic() - t0
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    check(r.returncode == 0, f"the probe exited 0 ({r.returncode})")
    check(r.stderr == "", "nothing on stderr")
    try:
        return json.loads(r.stdout), dt
    except ValueError:
        check(False, "the output is JSON")
        return {"wayland": {}, "pipewire": {}}, dt


def clean_env(rt):
    env = {k: v for k, v in os.environ.items()
           if k not in ("WAYLAND_DISPLAY", "WAYLAND_SOCKET", "PIPEWIRE_REMOTE", "PIPEWIRE_DEBUG")}
    env["XDG_RUNTIME_DIR"] = rt
    env["PIPEWIRE_RUNTIME_DIR"] = rt
    return env


def my_comm():
    with open("/proc/self/comm", encoding="utf-8") as f:
        return f.read().strip()


def wl_unset(probe, rt):
    d, _ = doctor(probe, clean_env(rt))
    w = d["wayland"]
    check(w["asked"] is False, "not asked without WAYLAND_DISPLAY")
    check(w["connected"] is False, "not connected")
    check("WAYLAND_DISPLAY" in w["why"], f"why: {w['why']}")


def wl_no_runtime_dir(probe, rt):
    env = clean_env(rt)
    del env["XDG_RUNTIME_DIR"]
    env["WAYLAND_DISPLAY"] = "wayland-doctor"
    d, _ = doctor(probe, env)
    w = d["wayland"]
    check(w["asked"] is True and w["connected"] is False, "asked, not connected")
    check("XDG_RUNTIME_DIR" in w["why"], f"why names XDG_RUNTIME_DIR: {w['why']}")


def wl_silent(probe, rt):
    path = os.path.join(rt, "silent-wl")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)  # never accepted: the connect succeeds, nothing answers
    env = clean_env(rt)
    del env["XDG_RUNTIME_DIR"]  # an absolute path needs none (libwayland's rule)
    env["WAYLAND_DISPLAY"] = path
    d, dt = doctor(probe, env)
    w = d["wayland"]
    check(w["asked"] is True and w["connected"] is False, "asked, not connected")
    check(w["socket"] == path, f"the absolute path used as it is ({w['socket']})")
    check(f"did not answer in {TIMEOUT_MS} ms" in w["why"], f"why: {w['why']}")
    check(TIMEOUT_MS * 0.9 <= w["elapsed_ms"] <= TIMEOUT_MS + 1500,
          f"gave up after {w['elapsed_ms']} ms (timeout {TIMEOUT_MS})")
    check(dt < 10, f"the whole probe took {dt:.2f} s")
    check(w["compositor_pid"] == os.getpid() and w["compositor"] == my_comm(),
          f"the socket's owner named: {w['compositor']} ({w['compositor_pid']})")
    # The same silence handed over as WAYLAND_SOCKET (a socketpair's end).
    a, b = socket.socketpair()
    env = clean_env(rt)
    env["WAYLAND_SOCKET"] = str(b.fileno())
    d, dt = doctor(probe, env, extra_fds=(b.fileno(),))
    w = d["wayland"]
    check(w["asked"] is True and w["connected"] is False, "WAYLAND_SOCKET: asked, not connected")
    check(w["socket"] == f"WAYLAND_SOCKET={b.fileno()}", f"WAYLAND_SOCKET: socket {w['socket']}")
    check(f"did not answer in {TIMEOUT_MS} ms" in w["why"], f"WAYLAND_SOCKET: why: {w['why']}")
    a.close()
    b.close()
    srv.close()


def start_compositor(comp, rt, extra):
    """Our compositor in a child; returns (process, its start line)."""
    rfd, wfd = os.pipe()
    p = subprocess.Popen([comp, "--socket", "doctor-wl", "--renderer", "none", "--ready-fd",
                          str(wfd)] + extra, env=clean_env(rt), pass_fds=(wfd,),
                         stderr=subprocess.PIPE, text=True)
    os.close(wfd)
    with os.fdopen(rfd) as r:
        ready = r.readline().strip()
    line = p.stderr.readline().strip() if ready else ""
    return p, ready, line


def probe_ours(probe, rt, comp, extra):
    """Our compositor with extra options, probed: (its wayland JSON, its start line), or None."""
    p, ready, line = start_compositor(comp, rt, extra)
    try:
        print(f"# syncbridge-wl-compositor {' '.join(extra)}: {line}")
        if not check(ready == "doctor-wl", f"the compositor listens ({ready!r})"):
            return None
        env = clean_env(rt)
        env["WAYLAND_DISPLAY"] = "doctor-wl"
        d, _ = doctor(probe, env)
        w = d["wayland"]
        check(w["asked"] is True and w["connected"] is True, f"connected ({w['why']})")
        check(w["socket"] == os.path.join(rt, "doctor-wl"), f"socket {w['socket']}")
        check(w["compositor_pid"] == p.pid and w["compositor"].startswith("syncbridge-wl"),
              f"compositor {w['compositor']} ({w['compositor_pid']})")
        # v4 (feedback) where it has a DRM device, v3 without (the host)
        check(w["dmabuf"] >= 3, f"zwp_linux_dmabuf_v1 v{w['dmabuf']}")
        said = "linux-drm-syncobj: yes" in line
        check((w["syncobj_v1"] > 0) == said,
              f"wp_linux_drm_syncobj_manager_v1 v{w['syncobj_v1']}, as the compositor said")
        if not extra:
            t = subprocess.run([probe, "--text", "wl"], env=env, capture_output=True, text=True,
                               timeout=20)
            print(t.stdout, end="")
            check("zwp_linux_explicit_synchronization_v1" in t.stdout and "pid" in t.stdout,
                  "the text names the compositor and the protocols")
        return w
    finally:
        p.terminate()
        p.wait(timeout=10)


def wl_ours(probe, rt, comp, syncobj):
    """Host: what the compositor offers without DRM. GPU guest (syncobj): linux-drm-syncobj-v1
    must be there, and goes with --no-drm-syncobj (the control); --no-explicit-v1 takes
    the other one away. (Without DRM the compositor refuses --no-explicit-v1: nothing
    would be left.)"""
    if not comp:
        print("SKIP: the compositor is not built")
        return SKIP
    w = probe_ours(probe, rt, comp, [])
    if w is None:
        return None
    check(w["explicit_v1"] == 2, f"zwp_linux_explicit_synchronization_v1 v{w['explicit_v1']}")
    if not syncobj:
        return None
    check(w["syncobj_v1"] >= 1, f"linux-drm-syncobj-v1 offered (v{w['syncobj_v1']})")
    w = probe_ours(probe, rt, comp, ["--no-drm-syncobj"])
    if w is not None:
        check(w["syncobj_v1"] == 0 and w["explicit_v1"] == 2,
              f"control --no-drm-syncobj: syncobj v{w['syncobj_v1']}, explicit v{w['explicit_v1']}")
    w = probe_ours(probe, rt, comp, ["--no-explicit-v1"])
    if w is not None:
        check(w["syncobj_v1"] >= 1 and w["explicit_v1"] == 0,
              f"--no-explicit-v1: syncobj v{w['syncobj_v1']}, explicit v{w['explicit_v1']}")
    return None


def doctor_ours(info, rt, comp):
    """GPU guest: the whole `syncbridge-info doctor --json` against our compositor, the
    verdicts included. With linux-drm-syncobj-v1 offered, a compositor path that implicit
    fences do not order (lavapipe: out = no) names that protocol as the way out; the
    control (--no-drm-syncobj) names zwp_linux_explicit_synchronization_v1 instead, and
    no verdict may claim linux-drm-syncobj-v1 there."""
    if not comp:
        print("SKIP: the compositor is not built")
        return SKIP
    for extra, want, not_want in (([], "linux-drm-syncobj-v1", None),
                                  (["--no-drm-syncobj"], "zwp_linux_explicit_synchronization_v1",
                                   "linux-drm-syncobj-v1")):
        p, ready, line = start_compositor(comp, rt, extra)
        try:
            if not check(ready == "doctor-wl", f"the compositor {extra} listens ({ready!r})"):
                continue
            env = clean_env(rt)
            env["WAYLAND_DISPLAY"] = "doctor-wl"
            t0 = time.monotonic()
            r = subprocess.run([info, "--json", "doctor", "--timeout-ms", "60000"], env=env,
                               capture_output=True, text=True, timeout=300)
            print(f"# doctor {extra}: exit {r.returncode} in {time.monotonic() - t0:.1f} s")
            if not check(r.returncode == 0, "doctor exits 0"):
                print(r.stderr)
                continue
            d = json.loads(r.stdout)
            w = d["wayland"]
            check(w["connected"] and w["compositor_pid"] == p.pid,
                  f"doctor names the compositor ({w['compositor']}, {w['compositor_pid']})")
            check((w["syncobj_v1"] > 0) == (not extra), f"syncobj v{w['syncobj_v1']}")
            paths = [v for v in d["verdicts"] if v["path"].endswith("-to-compositor")]
            for v in paths:
                print(f"# {v['path']} ({v['subject']}): {v['ordered']}; by: {v['by']}")
            unordered = [v for v in paths if v["ordered"] == "no"]
            check(len(unordered) > 0, "a compositor path implicit fences leave unordered "
                  "(lavapipe: out = no)")
            check(all(want in v["by"] for v in unordered), f"each names {want}")
            # Without linux-drm-syncobj-v1 the advice points at syncbridge-wl-proxy.
            proxy = [v for v in unordered if "syncbridge-wl-proxy" in v["advice"]]
            check(len(proxy) == (len(unordered) if not_want else 0),
                  f"{len(proxy)} of {len(unordered)} advise syncbridge-wl-proxy")
            if not_want:
                check(not any(not_want in v["by"] for v in paths), f"none claims {not_want}")
        finally:
            p.terminate()
            p.wait(timeout=10)
    return None


def start_pipewire(rt):
    log = open(os.path.join(rt, "daemon.log"), "w", encoding="utf-8")
    p = subprocess.Popen(["pipewire"], env=clean_env(rt), stdout=log, stderr=log)
    for _ in range(100):
        if os.path.exists(os.path.join(rt, "pipewire-0")):
            return p
        time.sleep(0.1)
    p.kill()
    p.wait()
    with open(os.path.join(rt, "daemon.log"), encoding="utf-8") as f:
        print(f.read())
    return None


def pw_daemon(probe, rt):
    if not shutil.which("pipewire"):
        print("SKIP: pipewire is not installed (scripts/setup.sh installs it)")
        return SKIP
    v = subprocess.run(["pipewire", "--version"], capture_output=True, text=True).stdout
    print(f"# {v.strip()}")
    p = start_pipewire(rt)
    if not check(p is not None, "the private daemon started"):
        return None
    try:
        d, _ = doctor(probe, clean_env(rt))
        pw = d["pipewire"]
        check(pw["running"] is True, f"running ({pw['why']})")
        check(pw["daemon_version"] != "" and pw["daemon_version"] in v,
              f"daemon version {pw['daemon_version']} (pipewire --version)")
        check(pw["library_version"] != "", f"library version {pw['library_version']}")
        check(pw["sync_timeline"] == 1, f"sync_timeline {pw['sync_timeline']}")
        check("must still offer" in pw["why"], f"why: {pw['why']}")
        check(pw["remote"] == os.path.join(rt, "pipewire-0"), f"remote {pw['remote']}")
    finally:
        p.terminate()
        p.wait(timeout=10)
    return None


def pw_none(probe, rt):
    d, dt = doctor(probe, clean_env(rt))
    pw = d["pipewire"]
    check(pw["running"] is False, "control: not running without a daemon")
    check(pw["sync_timeline"] == -1, f"sync_timeline unknown ({pw['sync_timeline']})")
    check(pw["library_version"] != "", f"library version {pw['library_version']}")
    check(rt in pw["why"], f"why names the remote: {pw['why']}")
    check(dt < 10, f"took {dt:.2f} s")


def pw_silent(probe, rt):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(os.path.join(rt, "pipewire-0"))
    srv.listen(4)
    d, dt = doctor(probe, clean_env(rt))
    pw = d["pipewire"]
    check(pw["running"] is False, "a silent socket is no daemon")
    check(f"did not answer in {TIMEOUT_MS} ms" in pw["why"], f"why: {pw['why']}")
    check(pw["sync_timeline"] == -1, f"sync_timeline unknown ({pw['sync_timeline']})")
    check(dt < 10, f"took {dt:.2f} s")
    srv.close()


def pw_rule(probe):
    cases = [("1.4.2", "1.4.2", 1), ("1.2.0", "1.4.2", 1), ("1.1.81", "1.2.0", 1),
             ("1.0.8", "1.0.8", 1), ("1.0.7", "1.4.2", 0), ("1.4.2", "0.3.65", 0),
             ("1.1.0", "1.4.2", 0), ("2.0.0", "1.2.0", 1), ("", "1.4.2", -1), ("1.4", "1.4.2", -1)]
    for dv, lv, want in cases:
        r = subprocess.run([probe, "rule", dv, lv], capture_output=True, text=True, timeout=10)
        if r.returncode == SKIP:
            print(r.stdout, end="")
            return SKIP
        check(r.stdout.strip() == str(want), f"daemon {dv!r}, library {lv!r}: {r.stdout.strip()} "
              f"(want {want})")
    return None


def main(argv):
    case, probe = argv[1], argv[2]
    comp = argv[3] if len(argv) > 3 else ""
    rt = tempfile.mkdtemp(prefix="sb-doctor-")
    os.chmod(rt, 0o700)
    try:
        rc = {
            "wl-unset": lambda: wl_unset(probe, rt),
            "wl-no-runtime-dir": lambda: wl_no_runtime_dir(probe, rt),
            "wl-silent": lambda: wl_silent(probe, rt),
            "wl-ours": lambda: wl_ours(probe, rt, comp, False),
            "wl-ours-syncobj": lambda: wl_ours(probe, rt, comp, True),
            "pw-daemon": lambda: pw_daemon(probe, rt),
            "pw-none": lambda: pw_none(probe, rt),
            "pw-silent": lambda: pw_silent(probe, rt),
            "pw-rule": lambda: pw_rule(probe),
            "doctor-ours": lambda: doctor_ours(probe, rt, comp),
        }[case]()
    finally:
        shutil.rmtree(rt, ignore_errors=True)
    return rc if rc is not None else finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
