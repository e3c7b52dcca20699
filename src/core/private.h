/* SPDX-License-Identifier: MIT */
/*
 * SB_PRIVATE: a core function the side libraries (libsyncbridge-egl,
 * -wayland-server, -wayland-client, -pipewire) call but applications must
 * not. libsyncbridge.so exports it under the version node SYNCBRIDGE_PRIVATE
 * (libsyncbridge.sym), never declared in include/syncbridge/, so that each
 * side library links the one shared core instead of embedding a hidden copy
 * of it: one process then has one log level, one trace state and one set of
 * syncobj waiter threads (docs/core.md, "One core per process").
 *
 * Not part of the ABI: the side libraries and libsyncbridge.so come from one
 * build and are installed together.
 */
#ifndef SB_PRIVATE_H
#define SB_PRIVATE_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define SB_PRIVATE __attribute__((visibility("default")))
#else
#define SB_PRIVATE
#endif

#endif
