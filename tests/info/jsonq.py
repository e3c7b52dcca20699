#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a JSON document (stdin, or --file F) against Python expressions.

    syncbridge-info --json fence 3 | jsonq.py 'd["status"] == "active"' 'len(d["fences"]) == 1'

Each expression sees the document as `d`. Prints "ok"/"not ok" per
expression (TAP-like) and the document on failure; exits 0 when the input is
valid JSON and every expression is true, 1 otherwise.
"""
import json
import sys


def main(argv):
    args = argv[1:]
    src = sys.stdin
    if len(args) >= 2 and args[0] == "--file":
        src = open(args[1], encoding="utf-8")
        args = args[2:]
    text = src.read()
    try:
        d = json.loads(text)
    except ValueError as e:
        print(f"not ok - the output is not JSON: {e}")
        print(text[:2000])
        return 1
    failed = 0
    for i, expr in enumerate(args, 1):
        try:
            ok = bool(eval(expr, {"d": d, "any": any, "all": all, "len": len, "sorted": sorted}))
            err = ""
        except Exception as e:  # a missing key is a failed check, not a crash
            ok, err = False, f" ({type(e).__name__}: {e})"
        print(f"{'ok' if ok else 'not ok'} {i} - {expr}{err}")
        failed += not ok
    if failed:
        print(json.dumps(d, indent=1)[:4000])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
