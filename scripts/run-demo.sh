#!/usr/bin/env bash
# Set everything up, build, and run the main demo: a producer process hands a
# dma-buf with a pending kernel fence to a consumer process, which waits through
# libsyncbridge before reading; then the same run without the bridge, which
# reads frames too early. Runs in the test VM unless the host has vgem.
#
# Environment: SYNCBRIDGE_BUILD (default: build), SYNCBRIDGE_SETUP=0, SYNCBRIDGE_VM.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SYNCBRIDGE_BUILD:-$top/build}
cd "$top"

if [ "${SYNCBRIDGE_SETUP:-1}" != 0 ]; then
	bash scripts/setup.sh
fi
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" >/dev/null
fi
ninja -C "$build" >/dev/null

demo="$build/examples/syncbridge-demo-handoff"
script='echo "== with syncbridge: the consumer waits for the producer fence =="; '"$demo"'; '
script+='echo; echo "== SYNCBRIDGE_DISABLE=1: the consumer reads without waiting =="; SYNCBRIDGE_DISABLE=1 '"$demo"
exec "$top/scripts/vm-run.sh" -- sh -c "$script"
