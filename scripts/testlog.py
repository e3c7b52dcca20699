#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read meson testlog.json files (one JSON object per test result per line).

  testlog.py count TESTLOG...     one line: "N passed, N failed, N skipped"
                                  (the line CI reads; meson's own summary is not)
  testlog.py failures TESTLOG...  after --repeat: each test that failed in any
                                  run, with how many runs and which
  testlog.py report TESTLOG...    each failed result: its name, result, time,
                                  exit status and the last lines of its output
                                  (what .ci/run prints just before its count, so
                                  that the end of a CI log says what failed)

A testlog that is missing means that run did not happen: count() counts it as
one failure, failures() lists it.
"""
import json
import sys

PASS = ("OK", "EXPECTEDFAIL")


def read(paths):
    """Yield (run number, result dict) for every result; (k, None) for a missing log."""
    for k, path in enumerate(paths, 1):
        try:
            f = open(path)
        except OSError:
            print(f"run-tests: {path} is missing", file=sys.stderr)
            yield k, None
            continue
        with f:
            for line in f:
                if line.strip():
                    yield k, json.loads(line)


def count(paths):
    passed = failed = skipped = 0
    for _, d in read(paths):
        r = d.get("result") if d else None
        if r in PASS:
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")


def failures(paths):
    failed = {}  # test -> [(run, result)], in order of first failure
    missing = []
    for k, d in read(paths):
        if d is None:
            missing.append(k)
            continue
        r = d.get("result")
        if r in PASS or r == "SKIP":
            continue
        # "syncbridge:vm+layer / NAME": the suites stay (some names are on both tiers).
        name = d.get("name", "?").split(":", 1)[-1]
        failed.setdefault(name, []).append((k, r))
    n = len(paths)
    print(f"run-tests: {n} runs; tests that failed in any of them:")
    if not failed and not missing:
        print("  (none)")
    width = max([len(t) for t in failed] + [len("total")])
    for t, fl in failed.items():
        which = ", ".join(f"run {k}: {r}" for k, r in fl)
        print(f"  {t:<{width}}  {len(fl)}/{n}  ({which})")
    for k in missing:
        print(f"  {'(run ' + str(k) + ')':<{width}}  no testlog: the run did not happen")
    runs_failed = {k for fl in failed.values() for k, _ in fl} | set(missing)
    total = sum(len(fl) for fl in failed.values()) + len(missing)
    print(f"  {'total':<{width}}  {total} failed result(s), {len(failed)} test(s), "
          f"{len(runs_failed)} of {n} runs with a failure")


REPORT_LINES = 40  # of each failed test's output
REPORT_TESTS = 3  # shown with their output; the others by name only


def report(paths):
    bad = []
    for k, d in read(paths):
        if d is None:
            bad.append((paths[k - 1], None))
        elif d.get("result") not in PASS and d.get("result") != "SKIP":
            bad.append((paths[k - 1], d))
    if not bad:
        return
    print(f"ci: {len(bad)} failed result(s):")
    for i, (path, d) in enumerate(bad):
        if d is None:
            print(f"ci: FAILED {path}: missing, that run did not happen")
            continue
        name = d.get("name", "?").split(":", 1)[-1]
        print(f"ci: FAILED {name}: {d.get('result')} after {d.get('duration', 0):.1f} s, "
              f"exit status {d.get('returncode')} ({path})")
        if i >= REPORT_TESTS:
            continue
        out = (d.get("stdout") or "").rstrip("\n").split("\n")
        print(f"ci: the last {min(len(out), REPORT_LINES)} of its {len(out)} output lines:")
        for line in out[-REPORT_LINES:]:
            print(f"ci: | {line[:300]}")


if __name__ == "__main__":
    cmds = {"count": count, "failures": failures, "report": report}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])
