#!/usr/bin/env bash
# Set everything up, build, and run the whole test suite (host tier + VM tier).
# Ends with one line "N passed, N failed, N skipped" (skips are never passes).
#
#   scripts/run-tests.sh [extra meson test args...]
#
# Environment:
#   SYNCBRIDGE_BUILD    build folder (default: build)
#   SYNCBRIDGE_SETUP=0  skip scripts/setup.sh (machine already set up)
#   SYNCBRIDGE_VM       qemu | native | auto (see docs/testing.md)
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SYNCBRIDGE_BUILD:-$top/build}
cd "$top"

if [ "${SYNCBRIDGE_SETUP:-1}" != 0 ]; then
	bash scripts/setup.sh
fi

if [ -f "$build/build.ninja" ]; then
	meson setup --reconfigure "$build" >/dev/null
else
	meson setup "$build" -Dwerror=true >/dev/null
fi
ninja -C "$build"

rc=0
meson test -C "$build" --print-errorlogs --num-processes 2 "$@" || rc=$?

# meson's own summary is not what CI reads: count from the machine-readable log.
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit "$rc"
