#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Start a screencast of mutter's primary monitor and keep it running.

    mutter-screencast.py BUS_ADDRESS

Over mutter's org.gnome.Mutter.ScreenCast D-Bus API on the session bus at
BUS_ADDRESS: CreateSession, RecordMonitor("" = the primary monitor), Start;
prints "node=ID" (PipeWireStreamAdded: the PipeWire node of the stream) and
runs until it is killed. mutter stops a session when
the D-Bus client that made it goes away, so this process must outlive the
consumer. Waits up to 120 s for mutter to own its name (its start under TCG).
Exit: 1 with a message on stderr when mutter refuses.
"""
import sys
import time

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

NAME = "org.gnome.Mutter.ScreenCast"
IFACE_SESSION = NAME + ".Session"
IFACE_STREAM = NAME + ".Stream"


def call(bus, path, iface, method, args, reply):
    return bus.call_sync(NAME, path, iface, method, args, GLib.VariantType(reply),
                         Gio.DBusCallFlags.NONE, 30000, None).unpack()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bus = Gio.DBusConnection.new_for_address_sync(
        sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
        | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
    end = time.monotonic() + 120
    while True:
        owned = bus.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                              "NameHasOwner", GLib.Variant("(s)", (NAME,)), GLib.VariantType("(b)"),
                              Gio.DBusCallFlags.NONE, 10000, None).unpack()[0]
        if owned:
            break
        if time.monotonic() > end:
            print("mutter-screencast: nobody owns %s after 120 s" % NAME, file=sys.stderr)
            return 1
        time.sleep(0.5)
    loop = GLib.MainLoop()
    node = []

    def added(conn, sender, path, iface, signal, params):
        node.append(params.unpack()[0])
        loop.quit()

    try:
        session = call(bus, "/org/gnome/Mutter/ScreenCast", NAME, "CreateSession",
                       GLib.Variant("(a{sv})", ({},)), "(o)")[0]
        stream = call(bus, session, IFACE_SESSION, "RecordMonitor",
                      GLib.Variant("(sa{sv})", ("", {"cursor-mode": GLib.Variant("u", 0)})), "(o)")[0]
        bus.signal_subscribe(NAME, IFACE_STREAM, "PipeWireStreamAdded", stream, None,
                             Gio.DBusSignalFlags.NONE, added)
        call(bus, session, IFACE_SESSION, "Start", None, "()")
    except GLib.Error as e:
        print("mutter-screencast: %s" % e.message, file=sys.stderr)
        return 1
    GLib.timeout_add_seconds(60, loop.quit)
    loop.run()
    if not node:
        print("mutter-screencast: no PipeWireStreamAdded in 60 s", file=sys.stderr)
        return 1
    print("node=%d" % node[0], flush=True)
    # Keep the session until a signal ends us.
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
