# SPDX-License-Identifier: MIT
"""What the tests that run syncbridge-wl-compositor as a program share
(stock_client.py, clipboard.py): their TAP-ish check lines, starting the
compositor, and stopping it or a client. Not a test of its own; imported from
beside it.
"""
import os
import subprocess
import time

failed = False  # a check failed


def check(ok, what):
    """Prints "ok - WHAT" or "not ok - WHAT" (and remembers the failure); returns ok."""
    global failed
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    if not ok:
        failed = True
    return ok


def start(cmd, rt, env, wait_s, wrap=()):
    """Starts the compositor, cmd (its path and options), with --ready-fd
    added, in the environment env, its stdout and stderr into
    rt/compositor.log. Waits up to wait_s seconds for it to listen (it writes
    the socket name to the ready fd then) or to exit. wrap: the words of a
    wrapper (valgrind) to run it under; --ready-fd goes after cmd's program,
    not the wrapper's. cmd may be any program that takes --ready-fd (the proxy).
    Returns (its Popen, whether it listens)."""
    ready = os.path.join(rt, "ready")
    fd = os.open(ready, os.O_WRONLY | os.O_CREAT, 0o600)
    cmd = list(wrap) + cmd[:1] + ["--ready-fd", str(fd)] + cmd[1:]
    print("# " + " ".join(cmd), flush=True)
    with open(os.path.join(rt, "compositor.log"), "w") as log:
        comp = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, pass_fds=(fd,), env=env)
    os.close(fd)
    for _ in range(int(wait_s * 10)):
        if os.path.getsize(ready) > 0 or comp.poll() is not None:
            break
        time.sleep(0.1)
    return comp, os.path.getsize(ready) > 0


def stop(proc, sig, wait_s=30):
    """Sends sig to proc (the compositor, a client) if it still runs and
    waits wait_s seconds for it to exit, then kills it.
    Returns (its exit status, whether it had to be killed)."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=wait_s), False
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(), True
