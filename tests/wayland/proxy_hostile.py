#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""syncbridge-wl-proxy against hostile clients (docs/wl-proxy.md, "Hostile
clients"), each on a raw socket: garbage, a message beyond the buffer, a
truncated message then a close, too many fds, an fd no message asked for, an
unknown object, an unknown opcode, a string without its NUL. Each must end
with the proxy's wl_display.error (its own wording: the compositor never saw
the message) and the connection closed; a client connected all along keeps
working, and the proxy's fd count (/proc/PID/fd) is back where it was.

Where the proxy offers linux-drm-syncobj-v1 (the guest: a render node with
timelines, vgem for the dma-buf), also: a commit whose acquire point has no
fence yet is held (a later wl_display.sync unanswered) while other clients go
on, and goes on once the test signals the point from the CPU; a client
disconnects with such a commit held and every fd comes back; and every
protocol error of linux-drm-syncobj-v1 the proxy raises, with the XML's code
on the right object.

    proxy_hostile.py COMPOSITOR PROXY [--control]

--control (guest): the proxy with --no-wait: the same never-signalling commit
is forwarded at once (the sync answered).
"""
import ctypes
import errno
import fcntl
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wlcomp  # noqa: E402
from wlcomp import check  # noqa: E402

SYNC_GLOBAL = "wp_linux_drm_syncobj_manager_v1"


def u32(*v):
    return struct.pack("<%dI" % len(v), *v)


def wstr(s):
    b = s.encode() + b"\0"
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)


class Client:
    """A Wayland client on a raw socket: it writes what it is told."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.next = 2
        self.buf = b""
        self.eof = False

    def new_id(self):
        self.next += 1
        return self.next - 1

    def raw(self, data, fds=()):
        try:
            if fds:
                socket.send_fds(self.s, [data], list(fds))
            else:
                self.s.sendall(data)
        except OSError:
            pass  # the proxy may have cut us off already

    def send(self, obj, op, payload=b"", fds=()):
        self.raw(u32(obj, (8 + len(payload)) << 16 | op) + payload, fds)

    def events(self, timeout, until=None):
        """Events (obj, op, payload) read for up to timeout s, or until
        until(event) is true, or the connection closes."""
        out, end = [], time.monotonic() + timeout
        while not self.eof:
            while len(self.buf) >= 8:
                obj, word = struct.unpack("<II", self.buf[:8])
                size = word >> 16
                if size < 8 or len(self.buf) < size:
                    break
                ev = (obj, word & 0xffff, self.buf[8:size])
                self.buf = self.buf[size:]
                out.append(ev)
                if until and until(ev):
                    return out
            left = end - time.monotonic()
            if left <= 0:
                break
            self.s.settimeout(left)
            try:
                data, fds, _, _ = socket.recv_fds(self.s, 65536, 28)
            except socket.timeout:
                break
            except OSError:
                data, fds = b"", []
            for fd in fds:
                os.close(fd)
            if not data:
                self.eof = True
            self.buf += data
        return out

    def sync(self, timeout=10):
        """wl_display.sync: True when its done came within timeout."""
        cb = self.new_id()
        self.send(1, 0, u32(cb))
        return any(e[0] == cb for e in self.events(timeout, lambda e: e[0] == cb))

    def registry(self):
        reg = self.new_id()
        self.send(1, 1, u32(reg))
        cb = self.new_id()
        self.send(1, 0, u32(cb))
        globs = {}
        for obj, op, p in self.events(10, lambda e: e[0] == cb):
            if obj == reg and op == 0:
                name, n = struct.unpack("<II", p[:8])
                version = struct.unpack_from("<I", p, 8 + (n + 3) // 4 * 4)[0]
                globs[p[8:8 + n - 1].decode()] = (name, version)
        return reg, globs

    def bind(self, reg, globs, iface, version):
        oid = self.new_id()
        self.send(reg, 0, u32(globs[iface][0]) + wstr(iface) + u32(version, oid))
        return oid

    def close(self):
        self.s.close()


def error_of(events):
    """(object, code, message) of the first wl_display.error, or None."""
    for obj, op, p in events:
        if obj == 1 and op == 0:
            o, code, n = struct.unpack("<III", p[:12])
            return o, code, p[12:12 + n - 1].decode(errors="replace")
    return None


def expect_cut(c, what, code=None, obj=None, text=None):
    err = error_of(c.events(10))
    ok = err is not None and c.eof and (code is None or err[1] == code) and \
        (obj is None or err[0] == obj) and (text is None or text in err[2])
    check(ok, "%s: %s" % (what, "wl_display.error %r, then closed" % (err,) if err else
                          "no error (closed: %s)" % c.eof))
    c.close()


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def wire_cases(path):
    """The hostile clients of the wire (any host)."""
    c = Client(path)
    rnd = random.Random(46)
    c.raw(bytes(rnd.randrange(256) for _ in range(256)))
    expect_cut(c, "garbage")
    c = Client(path)
    c.raw(u32(1, 0xfff0 << 16 | 0) + b"\0" * 64)
    expect_cut(c, "a message of 65520 bytes (beyond libwayland's 4096)", code=1)
    c = Client(path)
    c.raw(u32(1, 12 << 16 | 0))  # wl_display.sync without its argument
    c.close()
    check(True, "a truncated message, then a close (counted with the fds below)")
    c = Client(path)
    c.raw(u32(1, 4096 << 16 | 0))
    nul = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    for _ in range(10):
        c.raw(b"\0" * 4, [nul] * 28)
    os.close(nul)
    expect_cut(c, "280 fds for a message still arriving", text="too many file descriptors")
    c = Client(path)
    nul = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    c.send(1, 0, u32(c.new_id()), fds=[nul])  # wl_display.sync takes no fd
    os.close(nul)
    expect_cut(c, "an fd no message asked for", code=1, text="file descriptors no message")
    c = Client(path)
    c.send(77, 0, u32(5))
    expect_cut(c, "a request to object 77 (never made)", code=0, obj=1, text="invalid object 77")
    c = Client(path)
    c.send(1, 9)
    expect_cut(c, "wl_display opcode 9", code=1)
    c = Client(path)
    reg = c.new_id()
    c.send(1, 1, u32(reg))
    c.send(reg, 0, u32(1, 4) + b"wl_c" + u32(1, c.new_id()))  # a string without its NUL
    expect_cut(c, "a string without its NUL", code=1, text="malformed")


def ioc(nr, size):
    """DRM's _IOWR('d', nr, size)."""
    return (3 << 30) | (size << 16) | (0x64 << 8) | nr


def vgem_dmabuf(w, h):
    """A vgem dumb buffer as a dma-buf: (fd, stride), or None without vgem."""
    for card in sorted(os.listdir("/dev/dri")):
        # vgem's device is the platform device /sys/devices/platform/vgem
        dev = os.path.realpath("/sys/class/drm/%s/device" % card)
        if not card.startswith("card") or os.path.basename(dev) != "vgem":
            continue
        fd = os.open("/dev/dri/" + card, os.O_RDWR | os.O_CLOEXEC)
        try:
            dumb = bytearray(struct.pack("<IIIIIIQ", h, w, 32, 0, 0, 0, 0))
            fcntl.ioctl(fd, ioc(0xB2, 32), dumb)  # MODE_CREATE_DUMB
            handle, stride = struct.unpack_from("<II", dumb, 16)
            prime = bytearray(struct.pack("<IIi", handle, os.O_CLOEXEC | os.O_RDWR, -1))
            fcntl.ioctl(fd, ioc(0x2D, 12), prime)  # PRIME_HANDLE_TO_FD
            return struct.unpack_from("<i", prime, 8)[0], stride
        finally:
            os.close(fd)
    return None


def on_render_node(ioctls, default):
    """ioctls(fd) on each render node in turn until one takes them (no
    OSError): its result, or default where none does. The syncobj ioctls
    need a node of a driver with syncobjs, whichever it is."""
    for node in sorted(os.listdir("/dev/dri")):
        if not node.startswith("renderD"):
            continue
        fd = os.open("/dev/dri/" + node, os.O_RDWR | os.O_CLOEXEC)
        try:
            return ioctls(fd)
        except OSError:
            continue
        finally:
            os.close(fd)
    return default


def timeline_fd():
    """A new syncobj's fd from the first render node that makes one, or None."""
    def make(fd):
        create = bytearray(8)
        fcntl.ioctl(fd, ioc(0xBF, 8), create)  # SYNCOBJ_CREATE
        h = bytearray(struct.pack("<IIiI", struct.unpack_from("<I", create)[0], 0, -1, 0))
        fcntl.ioctl(fd, ioc(0xC1, 16), h)  # SYNCOBJ_HANDLE_TO_FD
        return struct.unpack_from("<i", h, 8)[0]
    return on_render_node(make, None)


def point_arrays(fd, tl_fd, point):
    """The handle arrays of the SYNCOBJ_TIMELINE_* ioctls for one point of
    the timeline tl_fd, on the node fd (SYNCOBJ_FD_TO_HANDLE): (handles,
    points), kept alive while the ioctl reads them."""
    h = bytearray(struct.pack("<IIiI", 0, 0, tl_fd, 0))
    fcntl.ioctl(fd, ioc(0xC2, 16), h)  # SYNCOBJ_FD_TO_HANDLE
    return (ctypes.c_uint32 * 1)(struct.unpack_from("<I", h)[0]), (ctypes.c_uint64 * 1)(point)


def timeline_signal(tl_fd, point):
    """Signal a point of the timeline tl_fd from the CPU (SYNCOBJ_TIMELINE_SIGNAL)."""
    def signal(fd):
        handles, points = point_arrays(fd, tl_fd, point)
        arr = bytearray(struct.pack("<QQII", ctypes.addressof(handles),
                                    ctypes.addressof(points), 1, 0))
        fcntl.ioctl(fd, ioc(0xCD, 24), arr)  # SYNCOBJ_TIMELINE_SIGNAL
        return True
    return on_render_node(signal, False)


def timeline_signalled(tl_fd, point):
    """Has the point of timeline tl_fd signalled (SYNCOBJ_TIMELINE_WAIT, no wait)? None: unknown."""
    def query(fd):
        handles, points = point_arrays(fd, tl_fd, point)
        wait = bytearray(struct.pack("<QQqIIII", ctypes.addressof(handles),
                                     ctypes.addressof(points), 0, 1, 0, 0, 0))
        try:
            fcntl.ioctl(fd, ioc(0xCA, 40), wait)  # SYNCOBJ_TIMELINE_WAIT, deadline 0
            return True
        except OSError as e:
            # ETIME: pending; EINVAL: no fence at that point yet (no WAIT_FOR_SUBMIT)
            if e.errno in (errno.ETIME, errno.EINVAL):
                return False
            return None
    return on_render_node(query, None)


class SyncSetup:
    """A surface, a dma-buf wl_buffer, the proxy's manager, a timeline and
    the surface's sync object, made on client c."""

    def __init__(self, c):
        reg, globs = c.registry()
        self.c, self.reg, self.globs = c, reg, globs
        self.comp = c.bind(reg, globs, "wl_compositor", 4)
        self.surf = c.new_id()
        c.send(self.comp, 0, u32(self.surf))
        self.dm = c.bind(reg, globs, "zwp_linux_dmabuf_v1", 3)
        self.buf = self.dmabuf_buffer()
        self.mgr = c.bind(reg, globs, SYNC_GLOBAL, 1)
        self.tl_fd = timeline_fd()  # kept: the test signals points on it
        self.tl = c.new_id()
        c.send(self.mgr, 2, u32(self.tl), fds=[self.tl_fd])
        self.ss = c.new_id()
        c.send(self.mgr, 1, u32(self.ss, self.surf))

    def dmabuf_buffer(self):
        """A wl_buffer on a new 64x64 vgem dma-buf (create_immed, XR24)."""
        c = self.c
        params = c.new_id()
        c.send(self.dm, 1, u32(params))
        dmabuf, stride = vgem_dmabuf(64, 64)
        c.send(params, 1, u32(0, 0, stride, 0, 0), fds=[dmabuf])
        os.close(dmabuf)
        buf = c.new_id()
        c.send(params, 3, u32(buf, 64, 64, 0x34325258, 0))
        return buf

    def points(self, acquire=None, release=None):
        if acquire is not None:
            self.c.send(self.ss, 1, u32(self.tl, 0, acquire))
        if release is not None:
            self.c.send(self.ss, 2, u32(self.tl, 0, release))

    def attach_commit(self, buf=None, frame=False):
        """Attach and commit; with frame, a wl_surface.frame first: its id."""
        if buf is not False:
            self.c.send(self.surf, 1, u32(self.buf if buf is None else buf, 0, 0))
        cb = None
        if frame:
            cb = self.c.new_id()
            self.c.send(self.surf, 3, u32(cb))
        self.c.send(self.surf, 6)
        return cb


def shm_buffer(s):
    """A wl_shm buffer on s's client (unsupported_buffer's case)."""
    c = s.c
    shm = c.bind(s.reg, s.globs, "wl_shm", 1)
    fd = os.memfd_create("pxy-shm", os.MFD_CLOEXEC)
    os.ftruncate(fd, 64 * 64 * 4)
    pool, buf = c.new_id(), c.new_id()
    c.send(shm, 0, u32(pool, 64 * 64 * 4), fds=[fd])  # create_pool
    os.close(fd)
    c.send(pool, 0, u32(buf, 0, 64, 64, 256, 1))  # create_buffer, XRGB8888
    return buf


def sync_error_cases(path):
    """Every error of linux-drm-syncobj-v1 the proxy raises, as the XML says."""
    def case(what, act, obj, code):
        c = Client(path)
        s = SyncSetup(c)
        act(s)
        expect_cut(c, what, code=code, obj=getattr(s, obj))
        os.close(s.tl_fd)

    case("no_acquire_point: a buffer with only a release point",
         lambda s: (s.points(release=2), s.attach_commit()), "ss", 4)
    case("no_release_point: a buffer with only an acquire point",
         lambda s: (s.points(acquire=1), s.attach_commit()), "ss", 5)
    case("no_buffer: points without a buffer attached",
         lambda s: (s.points(1, 2), s.attach_commit(buf=False)), "ss", 3)
    case("conflicting_points: release not after acquire on one timeline",
         lambda s: (s.points(5, 5), s.attach_commit()), "ss", 6)
    case("unsupported_buffer: a wl_shm buffer with points",
         lambda s: (s.points(1, 2), s.attach_commit(shm_buffer(s))), "ss", 2)
    case("surface_exists: a second get_surface",
         lambda s: s.c.send(s.mgr, 1, u32(s.c.new_id(), s.surf)), "mgr", 0)
    case("no_surface: a point set after the wl_surface's destroy",
         lambda s: (s.c.send(s.surf, 0), s.points(acquire=1)), "ss", 1)

    def bad_timeline(s):
        nul = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        s.c.send(s.mgr, 2, u32(s.c.new_id()), fds=[nul])
        os.close(nul)
    case("invalid_timeline: /dev/null imported as a timeline", bad_timeline, "mgr", 1)


def held_case(path, pid, other, base, control):
    """Commits whose acquire point has no fence yet: held until it signals
    (not with --no-wait); a client that leaves with one held."""
    c = Client(path)
    s = SyncSetup(c)
    s.points(1, 2)  # point 1: no fence until the test signals it
    cb = s.attach_commit(frame=True)
    # The witness of the hold: the commit's frame callback, which the
    # compositor answers only once it has the commit. A round trip right
    # after the commit is answered meanwhile (conn.c, pass_sync_now), as a
    # compositor with the protocol would: a client that signals its point
    # only after a round trip must not hang.
    seen = set()

    def wait_for(ids, timeout):
        for e in c.events(timeout, lambda e: ids <= seen | {e[0]}):
            seen.add(e[0])
        return ids <= seen

    rt = c.new_id()
    c.send(1, 0, u32(rt))  # wl_display.sync
    if control:
        check(wait_for({rt, cb}, 5), "control (--no-wait): the commit went on at once (its frame "
              "callback came, and the round trip after it)")
    else:
        answered = wait_for({rt}, 3)
        framed = wait_for({cb}, 1.5)
        check(not framed and not c.eof, "a commit on an unsignalled point is held (no frame callback)")
        check(answered, "a round trip right after the held commit is answered")
        # a request of another kind after the commit: a round trip behind it waits
        c.send(s.surf, 2, u32(0, 0, 1, 1))  # wl_surface.damage
        rt2 = c.new_id()
        c.send(1, 0, u32(rt2))
        check(not wait_for({rt2}, 1.5) and not c.eof, "a round trip behind a later request waits "
              "with the held commit")
        check(other.sync(), "another client goes on meanwhile")
        check(timeline_signal(s.tl_fd, 1), "the test signals point 1 from the CPU")
        check(wait_for({cb, rt2}, 5) and not c.eof, "then the commit goes on (its frame callback "
              "came) and the requests after it (the second round trip answered)")
    os.close(s.tl_fd)
    c.close()
    c = Client(path)
    s = SyncSetup(c)
    s.points(1, 2)  # never signalled
    s.attach_commit()
    c.sync(timeout=0.5)
    os.close(s.tl_fd)
    c.close()
    time.sleep(0.5)
    check(other.sync(), "a client gone with a commit held: the others go on")
    n = fd_count(pid)
    check(n == base, "the proxy's fds after the held clients left: %d (before: %d)" % (n, base))


def stale_release_case(path):
    """Buffer B shown, replaced by C (the compositor releases B), then B
    committed again on a point not signalled yet: the release of B's first
    use must not signal the held commit's release point."""
    c = Client(path)
    s = SyncSetup(c)
    other_buf = s.dmabuf_buffer()
    timeline_signal(s.tl_fd, 1)
    timeline_signal(s.tl_fd, 3)
    s.points(1, 2)
    s.attach_commit()          # B, point 1 signalled: forwarded
    s.points(3, 4)
    s.attach_commit(other_buf)  # C replaces B: the compositor releases B
    s.points(5, 6)
    s.attach_commit()          # B again, point 5 never signalled: held
    c.events(1.5)
    first, held = timeline_signalled(s.tl_fd, 2), timeline_signalled(s.tl_fd, 6)
    check(first is True, "B's first release point signalled at its wl_buffer.release (%s)" % first)
    check(held is False, "the held commit's release point is not (%s)" % held)
    os.close(s.tl_fd)
    c.close()


def pings_case(path, scale):
    """xdg_wm_base pings to a client whose commit is held: its pongs go
    ahead of the commit, so the compositor (--ping-timeout-ms) keeps it."""
    c = Client(path)
    s = SyncSetup(c)
    wm = c.bind(s.reg, s.globs, "xdg_wm_base", 1)
    role = c.new_id()
    c.send(s.comp, 0, u32(role))
    c.send(wm, 2, u32(c.new_id(), role))  # get_xdg_surface: the pings start
    s.points(1, 2)  # point 1: nobody signals it until the end
    s.attach_commit()
    pings, seen = 0, []
    end = time.monotonic() + 2.5 * scale
    while time.monotonic() < end and not c.eof:
        for ev in c.events(0.1):
            seen.append(ev)
            if ev[0] == wm and ev[1] == 0:  # ping(serial)
                c.send(wm, 3, ev[2][:4])
                pings += 1
    err = error_of(seen)
    check(pings >= 2 and not c.eof and err is None, "a held client answers %d pings and the "
          "compositor keeps it (%s)" % (pings, err or "no error"))
    timeline_signal(s.tl_fd, 1)
    check(c.sync(timeout=5 * scale), "its commit goes on once the point signals")
    os.close(s.tl_fd)
    c.close()


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--control"]):
        print("usage: proxy_hostile.py COMPOSITOR PROXY [--control]", file=sys.stderr)
        return 2
    comp_path, proxy_path = sys.argv[1:3]
    control = sys.argv[3:] == ["--control"]
    rt = tempfile.mkdtemp(prefix="sbwl-pxy-")
    os.makedirs(rt + "/p")
    env = dict(os.environ, XDG_RUNTIME_DIR=rt, WAYLAND_DISPLAY="comp")
    # WAYLAND_DEBUG=server: the compositor logs every request it reads and
    # every event it sends, a protocol error among them.
    # --ping-timeout-ms: a client with an xdg_surface that leaves a ping
    # unanswered that long is ended (pings_case).
    scale = int(os.environ.get("SYNCBRIDGE_VM_TIMEOUT_SCALE", "1"))
    comp, up = wlcomp.start([comp_path, "--socket", "comp", "--no-drm-syncobj", "--renderer",
                             "none", "--ping-timeout-ms", str(600 * scale)], rt,
                            dict(env, WAYLAND_DEBUG="server"), 60)
    if not check(up, "the compositor listens"):
        return 1
    # Under the valgrind setup the proxy runs in SYNCBRIDGE_VM_WRAPPER (it is
    # started through the wrapper's first word, which keeps its pid).
    wrap = os.environ.get("SYNCBRIDGE_VM_WRAPPER", "").split()
    pcmd = [proxy_path, "--socket", "px"] + (["--no-wait"] if control else [])
    proxy, up = wlcomp.start(pcmd, rt + "/p", env, 60 * (20 if wrap else 1), wrap)
    if not check(up, "the proxy listens"):
        wlcomp.stop(comp, signal.SIGTERM)
        return 1
    path = rt + "/px"
    other = Client(path)
    _, globs = other.registry()
    has_sync = SYNC_GLOBAL in globs
    check("wl_compositor" in globs and other.sync(), "a client lists the globals through the proxy "
          "(%d; %s offered)" % (len(globs), SYNC_GLOBAL if has_sync else "no syncobj"))
    base = fd_count(proxy.pid)
    if control and not has_sync:
        print("SKIP: no linux-drm-syncobj-v1 offered (no render node with timelines)")
        wlcomp.stop(proxy, signal.SIGTERM)
        wlcomp.stop(comp, signal.SIGTERM)
        return 77
    if not control:
        wire_cases(path)
    if has_sync and vgem_dmabuf(8, 8) is not None:
        if not control:
            sync_error_cases(path)
            stale_release_case(path)
            pings_case(path, scale)
        held_case(path, proxy.pid, other, base, control)
    elif has_sync:
        print("# no vgem: the syncobj cases need a dma-buf")
    time.sleep(0.5)
    check(other.sync(), "the client connected all along still gets answers")
    n = fd_count(proxy.pid)
    check(n == base, "the proxy's fds after every hostile client: %d (before: %d)" % (n, base))
    other.close()
    prc, _ = wlcomp.stop(proxy, signal.SIGTERM)
    crc, _ = wlcomp.stop(comp, signal.SIGTERM)
    check(prc == 0 and crc == 0, "the proxy and the compositor exit 0 (%d, %d)" % (prc, crc))
    with open(os.path.join(rt, "compositor.log"), errors="replace") as f:
        clog = f.read().splitlines()
    requests = [line for line in clog if "] wl_" in line or "] zwp_" in line or "] xdg_" in line]
    errors = [line for line in clog if "wl_display#1.error(" in line or "wl_display@1.error(" in line]
    check(requests and not errors, "the compositor read %d requests and raised no protocol error%s"
          % (len(requests), ": " + errors[0] if errors else ""))
    subprocess.run(["cat", rt + "/p/compositor.log"], check=False)
    shutil.rmtree(rt, ignore_errors=True)
    return 1 if wlcomp.failed else 0


if __name__ == "__main__":
    sys.exit(main())
