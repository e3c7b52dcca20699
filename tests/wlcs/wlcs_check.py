#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run wlcs against the example compositor and compare with the expected list.

    wlcs_check.py --wlcs RUNNER --module MODULE --expected FILE [--skip FILE] [--log FILE]
    wlcs_check.py --results LOG --expected FILE
    wlcs_check.py --control --expected FILE

The first runs the suite (RUNNER MODULE, every test but those of --skip FILE)
and reads gtest's "[       OK ]" / "[  FAILED  ]" / "[     SKIP ]" lines; the
second reads a log of such a run. Red (exit 1), each named on a "MISSING" line: a test of the
expected list (one name a line, '#' comments) that did not pass. Reported, not
red: a test that passed and is not listed ("NEW": add it to the list). A run
that ends before its summary (a crash) is red too: the tests after it never ran.

--control: the comparison given a result in which the first expected test
failed and the rest passed; exit 0 only if it said red and named that test
(the wlcs-control test: the comparison can fail).
"""
import argparse
import re
import subprocess
import sys
import time

# a test's own line: "[       OK ] Suite.name (3 ms)", "[     SKIP ] P/Suite.name/2 (9ms)",
# "[  FAILED  ] P/Suite.name/0, where GetParam() = ... (5 ms)"; the summary
# repeats the failures and skips without a time and counts them ("[  SKIPPED ] 645 tests")
RESULT = re.compile(r'^\[\s*(OK|FAILED|SKIP)\s*\] ([A-Za-z0-9_/]+\.[A-Za-z0-9_/]+)(?:,| \(|$)')
SUMMARY = re.compile(r'^\[==========\] \d+ tests? from .* (?:ran|run)\.')


def read_expected(path):
    names = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                names.append(line)
    return names


def parse(log):
    """{test: 'OK' | 'FAILED' | 'SKIPPED'} and whether the run reached its summary."""
    results, finished = {}, False
    for line in log.splitlines():
        m = RESULT.match(line.strip())
        # the summary repeats each failure as "[  FAILED  ] Name, where ...": not matched
        if m and m.group(2) not in results:
            results[m.group(2)] = 'SKIPPED' if m.group(1) == 'SKIP' else m.group(1)
        if SUMMARY.match(line.strip()):
            finished = True
    return results, finished


def compare(results, finished, expected, out):
    """Prints the verdict; returns whether it is red."""
    passed = {t for t, r in results.items() if r == 'OK'}
    missing = [t for t in expected if t not in passed]
    new = sorted(passed - set(expected))
    counts = {r: sum(1 for v in results.values() if v == r) for r in ('OK', 'FAILED', 'SKIPPED')}
    out.write('wlcs: %d tests: %d passed, %d failed, %d skipped; %d expected to pass\n'
              % (len(results), counts['OK'], counts['FAILED'], counts['SKIPPED'], len(expected)))
    for t in missing:
        out.write('MISSING %s: expected to pass, %s\n'
                  % (t, results[t].lower() if t in results else 'did not run'))
    for t in new:
        out.write('NEW %s: passes and is not in the expected list (add it)\n' % t)
    if not finished:
        out.write('wlcs: the run ended before its summary (a crash?)\n')
    red = bool(missing) or not finished
    out.write('wlcs: %s\n' % ('FAIL' if red else 'ok'))
    return red


def control(expected):
    if not expected:
        print('wlcs-control: the expected list is empty: nothing to fail')
        return 1
    lines = ['[ RUN      ] %s' % t for t in expected]
    lines += ['[  FAILED  ] %s (1 ms)' % expected[0]]
    lines += ['[       OK ] %s (1 ms)' % t for t in expected[1:]]
    lines += ['[==========] %d tests from 1 test suite ran. (1 ms total)' % len(expected)]
    results, finished = parse('\n'.join(lines))

    class Capture:
        text = ''

        def write(self, s):
            self.text += s
            sys.stdout.write(s)

    cap = Capture()
    red = compare(results, finished, expected, cap)
    if red and ('MISSING %s:' % expected[0]) in cap.text:
        print('wlcs-control: the comparison is red and names %s, as it must' % expected[0])
        return 0
    print('wlcs-control: the comparison did not catch the failed test %s' % expected[0])
    return 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--wlcs')
    ap.add_argument('--module')
    ap.add_argument('--results')
    ap.add_argument('--log')
    ap.add_argument('--expected', required=True)
    ap.add_argument('--skip', help='tests not to run, one a line (a negative gtest filter)')
    ap.add_argument('--control', action='store_true')
    args = ap.parse_args()
    expected = read_expected(args.expected)
    if args.control:
        return control(expected)
    if args.results:
        with open(args.results, encoding='utf-8', errors='replace') as f:
            log = f.read()
    else:
        if not args.wlcs or not args.module:
            ap.error('--wlcs and --module, or --results')
        cmd = [args.wlcs, args.module]
        skip = read_expected(args.skip) if args.skip else []
        both = sorted(set(skip) & set(expected))
        if both:
            print('wlcs: in both the expected list and --skip: %s' % ' '.join(both))
            return 1
        if skip:
            cmd.append('--gtest_filter=-' + ':'.join(skip))
            print('wlcs: %d tests not run (%s)' % (len(skip), args.skip))
        start = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False)
        log = proc.stdout.decode('utf-8', errors='replace')
        print('wlcs: ran in %.1f s, exit status %d' % (time.monotonic() - start, proc.returncode))
        if args.log:
            with open(args.log, 'w', encoding='utf-8') as f:
                f.write(log)
    results, finished = parse(log)
    return 1 if compare(results, finished, expected, sys.stdout) else 0


if __name__ == '__main__':
    sys.exit(main())
