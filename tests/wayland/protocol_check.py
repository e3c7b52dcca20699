#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a Wayland client's WAYLAND_DEBUG log against the protocol XML.

    protocol_check.py [--xml-dir DIR_OR_FILE ...] LOGFILE

Reads the lines libwayland-client prints with WAYLAND_DEBUG=1 (or =client):
1.23's shape,

    [1002261.484] {Default Queue}  -> wl_display#1.get_registry(new id wl_registry#2)
    [1003331.626] {Default Queue} discarded wl_shm#4.format(0)
    [1003188.180] zwp_linux_dmabuf_feedback_v1#10.format_table(fd 5, 64)
    [1003190.000] discarded [zombie]#12.[event 0](0 fd, 12 byte)

and the older one (1.21: "@" for "#", no queue names). Any other line (the
client's own output, Mesa's "libEGL debug:" lines) is ignored, as is a line
where a debug line does not start the line.

Checks every event the compositor sent against the XML (wayland.xml and
every *.xml under /usr/share/wayland-protocols, plus --xml-dir): the event
exists in the object's interface, has the XML's number of arguments, and its
"since" is not above the object's version; it is not on an id the client
never created. Then the sequence rules of a few protocols: linux-dmabuf
feedback batches and tranches, xdg-shell configure sequences and the initial
commit, presentation feedback / wl_callback / buffer release terminal events,
wl_keyboard focus, wl_data_device offers, and any wl_display.error. A log
that ends mid-sequence (a client stopped) is not a violation.

Exit status 0 when clean, 1 with one "protocol-check: LINE: message" line per
violation; the last line counts events, objects and violations. As a module:
check(text_or_lines, xml_dirs=None) -> [(line_no, message)], and
summary(...) -> (events, objects, per_interface, violations).
"""
import argparse
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET

DEFAULT_XML = ["/usr/share/wayland/wayland.xml", "/usr/share/wayland-protocols"]
SERVER_ID_START = 0xff000000

# The XML's own words, quoted in the messages.
Q_TRANCHE = ('linux-dmabuf-v1.xml: "For each tranche, a tranche_target_device, one tranche_flags '
             'and one or more tranche_formats events are sent, followed by a tranche_done"')
Q_BATCH = ('linux-dmabuf-v1.xml: "the compositor sends one main_device event, tranches (...), '
           'then one done event"')
Q_TABLE = ('linux-dmabuf-v1.xml: tranche_formats indices refer to "a format + modifier pair in the '
           'last received format table (see the format_table event)"')
Q_TABLE_SIZE = ('linux-dmabuf-v1.xml: "a tightly packed array of consecutive format + modifier pairs. '
                'Each pair is 16 bytes wide"')
Q_INDICES = ('linux-dmabuf-v1.xml: "an array of indices ... Each index is a 16-bit unsigned integer"')
Q_DEV = 'linux-dmabuf-v1.xml: "device dev_t value"'
Q_SEQ = ('xdg-shell.xml: "xdg_surface.configure ... marks the end of a configure sequence", '
         'sent "after a series of other configure events"')
Q_INITIAL = ('xdg-shell.xml: "the client must perform an initial commit without any buffer attached. '
             'The compositor will reply with ... an xdg_surface.configure event"')
Q_BOUNDS = ('xdg-shell.xml: "a new xdg_toplevel.configure_bounds will be sent, followed by '
            'xdg_toplevel.configure and xdg_surface.configure"')
Q_CAPS = ('xdg-shell.xml: wm_capabilities: "Compositors must send this event once before the first '
          'xdg_surface.configure event"')
Q_REPOS = ('xdg-shell.xml: "xdg_popup.repositioned followed by xdg_popup.configure and '
           'xdg_surface.configure will be emitted"')
Q_SERIAL = ('xdg-shell.xml: ack_configure "consumes the serial number sent with the request, as well '
            'as serial numbers sent by all configure events sent on this xdg_surface prior"')
Q_KEYMAP = 'wayland.xml: wl_keyboard.keymap gives the keymap the key events of a focus refer to'
Q_FOCUS = ('wayland.xml: wl_keyboard key and modifiers events go to the surface with keyboard focus '
           '(between enter and leave)')
Q_OFFER = ('wayland.xml: wl_data_device.data_offer: "Immediately following the '
           'wl_data_device.data_offer event, the new data_offer object will send out '
           'wl_data_offer.offer events to describe the mime types it offers"')

# Events after which an object gets no more events (besides type="destructor").
TERMINAL = {
    "wl_callback": {"done"},
    "wp_presentation_feedback": {"presented", "discarded"},
    "zwp_linux_buffer_release_v1": {"fenced_release", "immediate_release"},
}
TERMINAL_QUOTE = {
    "wl_callback": 'wayland.xml: wl_callback.done is type="destructor"',
    "wp_presentation_feedback": ('presentation-time.xml: "the object is destroyed" after presented '
                                 "or discarded (zero or more sync_output, then exactly one of them)"),
    "zwp_linux_buffer_release_v1": ('linux-explicit-synchronization-unstable-v1.xml: "exactly one of '
                                    'the fenced_release and immediate_release events" is sent'),
}


class Message:
    __slots__ = ("name", "since", "nargs", "destructor", "opcode")

    def __init__(self, el, opcode):
        self.name = el.get("name")
        self.since = int(el.get("since", "1"))
        self.destructor = el.get("type") == "destructor"
        self.opcode = opcode
        n = 0
        for a in el.iter("arg"):
            # An untyped new_id goes on the wire (and in the log) as
            # interface name, version, id.
            n += 3 if a.get("type") == "new_id" and not a.get("interface") else 1
        self.nargs = n


class Interface:
    __slots__ = ("name", "version", "file", "events", "by_event", "requests")

    def __init__(self, el, path):
        self.name = el.get("name")
        self.version = int(el.get("version", "1"))
        self.file = os.path.basename(path)
        self.events = [Message(e, i) for i, e in enumerate(el.findall("event"))]
        self.by_event = {m.name: m for m in self.events}
        self.requests = {r.get("name"): Message(r, i) for i, r in enumerate(el.findall("request"))}


_proto_cache = {}


def xml_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
        elif os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(".xml"):
                        yield os.path.join(root, f)


def load_protocols(xml_dirs=None, default=True):
    """{interface name: Interface} from the default XML and xml_dirs (files or folders)."""
    paths = (DEFAULT_XML if default else []) + list(xml_dirs or [])
    key = tuple(paths)
    if key in _proto_cache:
        return _proto_cache[key]
    ifaces = {}
    for f in xml_files(paths):
        try:
            root = ET.parse(f).getroot()
        except (ET.ParseError, OSError):
            continue
        if root.tag != "protocol":
            continue
        for el in root.iter("interface"):
            i = Interface(el, f)
            old = ifaces.get(i.name)
            if old is None or i.version > old.version:
                ifaces[i.name] = i
    _proto_cache[key] = ifaces
    return ifaces


# [time]: how every WAYLAND_DEBUG line starts
DEBUG_PREFIX_RE = re.compile(r"\s*\[\s*\d+\.\d+\]")
# [time] {Queue} discarded  -> iface#id.name(args)
LINE_RE = re.compile(
    r"\s*\[\s*\d+\.\d+\] (?:\{[^}]*\} )?(discarded (?:\[[^\]#]*\] )?)?( -> )?"
    r"([A-Za-z_]\w*|\[zombie\]|\[unknown\])[#@](\d+)\.(\w+|\[event (\d+)\])\((.*)\)")
OBJ_RE = re.compile(r"([A-Za-z_]\w*|\[unknown\])[#@](\d+)$")
NEW_RE = re.compile(r"new id ([A-Za-z_]\w*|\[unknown\])[#@](\d+|nil)$")


def split_args(s):
    if not s:
        return []
    if '"' not in s:
        return s.split(", ")
    out, i, n = [], 0, len(s)
    while i < n:
        if s[i] == '"':
            # libwayland prints strings unescaped: the closing quote is the
            # one followed by ", " or the end.
            j = i + 1
            while True:
                k = s.find('"', j)
                if k < 0:
                    k = n - 1
                    break
                if k == n - 1 or s.startswith(", ", k + 1):
                    break
                j = k + 1
            out.append(s[i:k + 1])
            i = k + 3
        else:
            k = s.find(", ", i)
            if k < 0:
                k = n
            out.append(s[i:k])
            i = k + 2
    return out


def obj_id(arg):
    """The id of an object argument, 0 for nil, None if it is not one."""
    if arg == "nil":
        return 0
    m = OBJ_RE.match(arg)
    return int(m.group(2)) if m else None


class Obj:
    __slots__ = ("id", "iface", "version", "parent", "line", "destroyed", "deleted", "st")

    def __init__(self, oid, iface, version, parent, line):
        self.id, self.iface, self.version, self.parent, self.line = oid, iface, version, parent, line
        self.destroyed = False    # the client sent a destructor request
        self.deleted = False      # delete_id received (client ids)
        self.st = {}

    def __str__(self):
        return f"{self.iface}#{self.id}"


Summary = collections.namedtuple("Summary", "events objects per_interface violations")


class Checker:
    def __init__(self, xml_dirs=None, default_xml=True):
        self.protos = load_protocols(xml_dirs, default_xml)
        self.objs = {1: Obj(1, "wl_display", 1, None, 0)}
        self.n_objects = 1
        self.events = 0
        self.per_iface = collections.Counter()
        self.violations = []
        self.surf_xdg = {}        # wl_surface id -> its xdg_surface Obj

    def flag(self, line, msg):
        self.violations.append((line, msg))

    # ---- input ----
    def feed(self, lines):
        match = LINE_RE.match
        for no, line in enumerate(lines, 1):
            if "[" not in line:
                continue
            m = match(line)
            if m is None:
                continue
            discarded, send, iface, oid, name, opcode, args = m.groups()
            oid = int(oid)
            if send:
                self.request(no, iface, oid, name, split_args(args))
            elif opcode is not None:
                self.lost_event(no, iface, oid, int(opcode))
            else:
                self.event(no, bool(discarded), iface, oid, name, split_args(args))
        return self

    # ---- requests: objects come and go ----
    def create(self, no, oid, iface, version, parent):
        o = Obj(oid, iface, version, parent, no)
        self.objs[oid] = o
        self.n_objects += 1
        return o

    def request(self, no, iface, oid, name, args):
        parent = self.objs.get(oid)
        version = parent.version if parent is not None else None
        for i, a in enumerate(args):
            if not a.startswith("new id "):
                continue
            m = NEW_RE.match(a)
            if m is None or m.group(2) == "nil":
                continue
            niface, nid = m.group(1), int(m.group(2))
            if niface == "[unknown]" and i >= 2:
                # wl_registry.bind(name, "iface", version, new id [unknown]#N)
                niface = args[i - 2].strip('"')
                try:
                    version = int(args[i - 1])
                except ValueError:
                    version = None
            child = self.create(no, nid, niface, version, oid)
            if iface == "xdg_wm_base" and name == "get_xdg_surface" and len(args) > 1:
                sid = obj_id(args[1])
                child.st["surface"] = sid
                child.st["serials"] = set()
                if sid:
                    self.surf_xdg[sid] = child
            elif iface == "xdg_surface" and name in ("get_toplevel", "get_popup") and parent:
                parent.st["role"] = child
                parent.st["committed"] = False
        if iface == "wl_surface" and name == "commit":
            xs = self.surf_xdg.get(oid)
            if xs is not None and "role" in xs.st and not xs.destroyed:
                xs.st["committed"] = True
        if parent is None:
            return
        pi = self.protos.get(parent.iface)
        if pi is not None:
            req = pi.requests.get(name)
            if req is not None and req.destructor:
                parent.destroyed = True
                if oid >= SERVER_ID_START:
                    parent.deleted = True

    # ---- events ----
    def count(self, iface):
        self.events += 1
        self.per_iface[iface] += 1

    def lost_event(self, no, tag, oid, opcode):
        """1.23's "discarded [zombie]#N.[event K](...)": no proxy to dispatch to."""
        o = self.objs.get(oid)
        self.count(o.iface if o else tag)
        if o is None:
            self.flag(no, f"{tag}#{oid}: event {opcode} on id {oid}, which the client never created")
            return
        pi = self.protos.get(o.iface)
        if pi is not None and opcode >= len(pi.events):
            self.flag(no, f"{o}: event opcode {opcode}, but {o.iface} has {len(pi.events)} events "
                          f"({pi.file})")

    def event(self, no, discarded, iface, oid, name, args):
        self.count(iface)
        o = self.objs.get(oid)
        if o is None:
            self.flag(no, f"{iface}#{oid}: {name} on id {oid}, which the client never created "
                          f"(no request or event made it)")
            return
        sequence = True
        if o.iface != iface:
            # A discarded event of an earlier object with the same id,
            # dispatched late from another queue: check the message only.
            if not discarded:
                self.flag(no, f"{iface}#{oid}: the log made #{oid} a {o.iface} (line {o.line}) "
                              f"but libwayland printed {iface}")
            o = Obj(oid, iface, None, None, no)
            sequence = False
        pi = self.protos.get(iface)
        if pi is None:
            return
        ev = pi.by_event.get(name)
        if ev is None:
            self.flag(no, f"{o}: {iface} has no event '{name}' ({pi.file}, {iface} version "
                          f"{pi.version})")
            return
        if len(args) != ev.nargs:
            self.flag(no, f"{o}: {name} with {len(args)} arguments, the XML has {ev.nargs} ({pi.file})")
            return
        if o.version is not None and ev.since > o.version:
            self.flag(no, f"{o}: {name} is since version {ev.since} but the object is version "
                          f"{o.version} ({pi.file}: <event name=\"{name}\" since=\"{ev.since}\">)")
        for a in args:
            if a.startswith("new id "):
                m = NEW_RE.match(a)
                if m and m.group(2) != "nil":
                    self.create(no, int(m.group(2)), m.group(1), o.version, oid)
        if not sequence:
            return
        term = o.st.get("terminal")
        if term is not None:
            why = TERMINAL_QUOTE.get(iface) or f'{pi.file}: {term[0]} is type="destructor"'
            self.flag(no, f"{o}: {name} after {term[0]} (line {term[1]}), which ends the object "
                          f"({why})")
            return
        if ev.destructor or name in TERMINAL.get(iface, ()):
            o.st["terminal"] = (name, no)
        rule = RULES.get(iface)
        if rule is not None:
            rule(self, no, o, name, args)

    # ---- sequence rules ----
    def r_display(self, no, o, name, args):
        if name == "delete_id":
            try:
                d = self.objs.get(int(args[0]))
            except ValueError:
                d = None
            if d is not None:
                d.deleted = True
        elif name == "error":
            tgt = args[0]
            self.flag(no, f"wl_display#1: error on {tgt}, code {args[1]}: {args[2]}")

    def r_feedback(self, no, o, name, args):
        st = o.st
        b = st.get("batch")
        if b is None:
            b = st["batch"] = {"main": 0, "tranches": 0, "cur": None}
        cur = b["cur"]
        if name == "format_table":
            st["table"] = True
            try:
                size = int(args[1])
            except ValueError:
                size = -1
            if size <= 0 or size % 16:
                self.flag(no, f"{o}: format_table of {size} bytes, not a positive multiple of 16 "
                              f"({Q_TABLE_SIZE})")
        elif name == "main_device":
            b["main"] += 1
            if b["main"] == 2:
                self.flag(no, f"{o}: a second main_device before done ({Q_BATCH})")
            self.dev_size(no, o, name, args[0])
        elif name in ("tranche_target_device", "tranche_flags", "tranche_formats"):
            if cur is None:
                cur = b["cur"] = {"tranche_target_device": 0, "tranche_flags": 0, "tranche_formats": 0}
            cur[name] += 1
            if name != "tranche_formats" and cur[name] == 2:
                self.flag(no, f"{o}: a second {name} in one tranche ({Q_TRANCHE})")
            if name == "tranche_target_device":
                self.dev_size(no, o, name, args[0])
            elif name == "tranche_formats":
                n = array_size(args[0])
                if n == 0:
                    self.flag(no, f"{o}: tranche_formats with an empty array (array[0]): a tranche needs "
                                  f"one or more formats ({Q_TRANCHE})")
                elif n is not None and n % 2:
                    self.flag(no, f"{o}: tranche_formats of {n} bytes, not whole 16-bit indices "
                                  f"({Q_INDICES})")
        elif name == "tranche_done":
            b["tranches"] += 1
            b["cur"] = None
            if cur is None:
                cur = {"tranche_target_device": 0, "tranche_flags": 0, "tranche_formats": 0}
            missing = [k for k in ("tranche_target_device", "tranche_flags", "tranche_formats")
                       if not cur[k]]
            if missing:
                what = ", ".join("no " + k for k in missing)
                self.flag(no, f"{o}: tranche_done with {what} ({Q_TRANCHE})")
        elif name == "done":
            st["batch"] = None
            problems = []
            if cur is not None:
                problems.append("an unfinished tranche (no tranche_done after its events)")
            if b["tranches"] == 0:
                problems.append("no tranche")
            if b["main"] == 0:
                problems.append("no main_device")
            if problems:
                self.flag(no, f"{o}: done with {' and '.join(problems)} in the batch ({Q_BATCH})")
            if not st.get("table"):
                self.flag(no, f"{o}: done but no format_table was ever sent on this object ({Q_TABLE})")

    def dev_size(self, no, o, name, arg):
        n = array_size(arg)
        if n is not None and n not in (4, 8):
            self.flag(no, f"{o}: {name} of {n} bytes, not a dev_t (4 or 8) ({Q_DEV})")

    def r_xdg_surface(self, no, o, name, args):
        if name != "configure":
            return
        st = o.st
        if "role" in st and not st.get("committed"):
            self.flag(no, f"{o}: configure before the client's first wl_surface.commit of "
                          f"wl_surface#{st.get('surface')} after its role was assigned ({Q_INITIAL})")
        elif "role" not in st and "surface" in st:
            self.flag(no, f"{o}: configure before the client assigned a role and committed ({Q_INITIAL})")
        serials = st.setdefault("serials", set())
        if args[0] in serials:
            self.flag(no, f"{o}: configure serial {args[0]} sent twice on this xdg_surface ({Q_SERIAL})")
        serials.add(args[0])
        role = st.get("role")
        if role is None:
            return
        rs = role.st
        rs["pending"] = None
        if rs.get("bounds") is not None:
            self.flag(no, f"{o}: configure ends a sequence where {role}.configure_bounds (line "
                          f"{rs['bounds']}) was not followed by {role}.configure ({Q_BOUNDS})")
            rs["bounds"] = None
        if rs.get("repositioned") is not None:
            self.flag(no, f"{o}: configure ends a sequence where {role}.repositioned (line "
                          f"{rs['repositioned']}) was not followed by {role}.configure ({Q_REPOS})")
            rs["repositioned"] = None
        if (role.iface == "xdg_toplevel" and role.version is not None and role.version >= 5
                and not rs.get("caps") and not st.get("configured")):
            self.flag(no, f"{o}: first configure, but {role} (version {role.version}) got no "
                          f"wm_capabilities before it ({Q_CAPS})")
        st["configured"] = True

    def r_role(self, no, o, name, args):
        rs = o.st
        if name == "configure":
            p = rs.get("pending")
            if p is not None:
                xs = self.objs.get(o.parent)
                self.flag(no, f"{o}: configure, but the configure of line {p} was not followed by "
                              f"{xs if xs else 'its xdg_surface'}.configure ({Q_SEQ})")
            rs["pending"] = no
            rs["bounds"] = None
            rs["repositioned"] = None
        elif name == "configure_bounds":
            rs["bounds"] = no
        elif name == "wm_capabilities":
            rs["caps"] = no
        elif name == "repositioned":
            rs["repositioned"] = no

    def r_keyboard(self, no, o, name, args):
        st = o.st
        if name == "keymap":
            st["keymap"] = True
        elif name == "enter":
            if not st.get("keymap"):
                self.flag(no, f"{o}: enter before any keymap ({Q_KEYMAP})")
            if st.get("focus") is not None:
                self.flag(no, f"{o}: enter while focus is already on {st['focus'][0]} (enter of line "
                              f"{st['focus'][1]}, no leave since)")
            st["focus"] = (args[1], no)
        elif name == "leave":
            if st.get("focus") is None:
                self.flag(no, f"{o}: leave without a focus (no enter, or a leave already)")
            st["focus"] = None
        elif name in ("key", "modifiers"):
            if st.get("focus") is None:
                since = "no enter" if "focus" not in st else "no enter since the leave"
                self.flag(no, f"{o}: {name} outside the focus ({since}) ({Q_FOCUS})")

    def r_data_device(self, no, o, name, args):
        st = o.st
        offers = st.setdefault("offers", set())
        if name == "data_offer":
            m = NEW_RE.match(args[0])
            if m and m.group(2) != "nil":
                offers.add(int(m.group(2)))
                d = self.objs.get(int(m.group(2)))
                if d is not None:
                    d.st["device"] = o.id
        elif name in ("selection", "enter"):
            oid = obj_id(args[-1])
            if oid:
                if oid not in offers:
                    self.flag(no, f"{o}: {name} names wl_data_offer#{oid}, which no data_offer event "
                                  f"of this wl_data_device introduced ({Q_OFFER})")
                d = self.objs.get(oid)
                if d is not None and "used" not in d.st:
                    d.st["used"] = (name, no)

    def r_data_offer(self, no, o, name, args):
        if name == "offer" and "used" in o.st:
            u = o.st["used"]
            self.flag(no, f"{o}: offer {args[0]} after the wl_data_device.{u[0]} of line {u[1]} "
                          f"used this offer ({Q_OFFER})")

    def result(self):
        return Summary(self.events, self.n_objects, dict(self.per_iface), self.violations)


def array_size(arg):
    if arg.startswith("array[") and arg.endswith("]"):
        try:
            return int(arg[6:-1])
        except ValueError:
            return None
    return None


RULES = {
    "wl_display": Checker.r_display,
    "zwp_linux_dmabuf_feedback_v1": Checker.r_feedback,
    "xdg_surface": Checker.r_xdg_surface,
    "xdg_toplevel": Checker.r_role,
    "xdg_popup": Checker.r_role,
    "wl_keyboard": Checker.r_keyboard,
    "wl_data_device": Checker.r_data_device,
    "wl_data_offer": Checker.r_data_offer,
}

def summary(lines_or_text, xml_dirs=None):
    """Summary(events, objects, per_interface {iface: events}, violations) of the
    log (a str or lines); xml_dirs add to the defaults."""
    lines = lines_or_text.splitlines() if isinstance(lines_or_text, str) else lines_or_text
    return Checker(xml_dirs).feed(lines).result()


def check(lines_or_text, xml_dirs=None):
    """[(line_no, message)] for the log (a str or lines): summary()'s violations."""
    return list(summary(lines_or_text, xml_dirs).violations)


def is_debug_line(line):
    """Whether a line of a client's output is libwayland's WAYLAND_DEBUG, not its own."""
    return DEBUG_PREFIX_RE.match(line) is not None


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--xml-dir", action="append", default=[],
                   help="more protocol XML (a folder, searched recursively, or a file)")
    p.add_argument("--per-interface", action="store_true", help="print the events per interface")
    p.add_argument("log")
    a = p.parse_args(argv[1:])
    with open(a.log, errors="replace") as f:
        res = Checker(a.xml_dir).feed(f).result()
    for no, msg in res.violations:
        print(f"protocol-check: {no}: {msg}")
    if a.per_interface:
        for k, v in sorted(res.per_interface.items()):
            print(f"protocol-check:   {k}: {v} events")
    print(f"protocol-check: {res.events} events on {res.objects} objects checked, "
          f"{len(res.violations)} violations")
    return 1 if res.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
