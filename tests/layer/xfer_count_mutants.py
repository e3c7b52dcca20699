#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The mutation check behind layer-acquire-drops (docs/reliability.md, "The
layer's transfer count"): build layers that get dev->xfer_cmds wrong on one
path each, run layer-acquire-drops against every one of them in one guest, and
print which cases failed.

    tests/layer/xfer_count_mutants.py [--build build] [--out DIR] [--no-run] [MUTANT...]

Nothing in the source tree is edited: each mutant is a copy of layer/track.c
(or layer/submit.c) compiled with the build's own command and linked with the
build's other layer objects into DIR/NAME/ (default: build-xfer-mutants/ next
to the build folder). In the guest, each .so is copied over the build tree's
layer inside the guest's throw-away overlay, so the test binary (whose layer
paths are compiled in) loads it. Build the dev build first (ninja -C build).

Exit status: 0 when every mutant fails at least one case and the unmutated
copy ('identity') passes; 1 otherwise; 2 when a mutant no longer applies
(track.c changed: update the anchor below).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYER_SO = 'layer/libVkLayer_SYNCBRIDGE_implicit_sync.so'
DEC = 'atomic_fetch_sub_explicit(&dev->xfer_cmds, 1, memory_order_relaxed);'

EXTRA = """
static void
mut_extra(struct sbl_device *dev, VkCommandBuffer cb, bool want_xfer)
{
	pthread_mutex_lock(&dev->lock);
	struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
	if (cmd && (cmd->count != 0) == want_xfer)
		%s
	pthread_mutex_unlock(&dev->lock);
}

static VKAPI_ATTR VkResult VKAPI_CALL
BeginCommandBuffer(""" % DEC

FREE = """			if (cmds[i])
				cmd_destroy(dev, sbl_map_remove(&dev->cmds,
								(uint64_t)(uintptr_t)cmds[i]));"""
POOL_RESET = """			if (cmd->pool == pool)
				cmd_clear(dev, cmd);"""
POOL_DESTROY = """				sbl_map_remove(&dev->cmds, dev->cmds.keys[i]);
				cmd_destroy(dev, cmd);"""
BEGIN = "		cmd_forget(dev, cb); /* begin implicitly resets */"
RESET = """	if (dev->mode == SBL_MODE_TRANSFERS)
		cmd_forget(dev, cb);
	return dev->ResetCommandBuffer(cb, flags);"""


class Stale(Exception):
    pass


def rep(text, old, new):
    if text.count(old) != 1:
        raise Stale(old.strip().splitlines()[0])
    return text.replace(old, new)


def free_mut(cond):
    return """			if (cmds[i]) {
				struct sbl_cmd *m_ = sbl_map_remove(&dev->cmds, (uint64_t)(uintptr_t)cmds[i]);
				if (m_ && %s)
					%s
				cmd_destroy(dev, m_);
			}""" % (cond, DEC)


def pool_reset_mut(cond):
    return """			if (cmd->pool == pool) {
				if (%s)
					%s
				cmd_clear(dev, cmd);
			}""" % (cond, DEC)


def pool_destroy_mut(cond):
    return """				sbl_map_remove(&dev->cmds, dev->cmds.keys[i]);
				if (%s)
					%s
				cmd_destroy(dev, cmd);""" % (cond, DEC)


def with_extra(t):
    return rep(t, "\nstatic VKAPI_ATTR VkResult VKAPI_CALL\nBeginCommandBuffer(", EXTRA)


def forget(want):
    return "{ mut_extra(dev, cb, %s); cmd_forget(dev, cb); }" % want


# The five drops, each mutated two ways: '-x2' decrements again on a drop of
# a command buffer that held transfers, '-plain' decrements on one that held
# none. name: (what the -x2 line calls it, the -plain line, mutate(text, x2)).
DROPS = {
    'free': ('free', 'free',
             lambda t, x2: rep(t, FREE, free_mut('m_->count' if x2 else '!m_->count'))),
    'reset': ('reset', 'reset',
              lambda t, x2: with_extra(rep(t, RESET, RESET.replace(
                  'cmd_forget(dev, cb);', forget('true' if x2 else 'false'))))),
    'rebegin': ('re-begin', 'begin',
                lambda t, x2: with_extra(rep(t, BEGIN, '\t\t' + forget('true' if x2 else 'false')))),
    'pool-reset': ('pool reset', 'pool reset',
                   lambda t, x2: rep(t, POOL_RESET, pool_reset_mut(('' if x2 else '!') + 'cmd->count'))),
    'pool-destroy': ('pool destroy', 'pool destroy',
                     lambda t, x2: rep(t, POOL_DESTROY,
                                       pool_destroy_mut(('' if x2 else '!') + 'cmd->count'))),
}

# name: (file, description, mutate(text) -> text)
MUTANTS = {}
for _name, (_what, _, _mutate) in DROPS.items():
    MUTANTS[_name + '-x2'] = ('track', _what + ' decrements twice' +
                              (' (B with transfers)' if _name == 'free' else ''),
                              lambda t, f=_mutate: f(t, True))
for _name, (_, _what, _mutate) in DROPS.items():
    MUTANTS[_name + '-plain'] = ('track', _what + ' decrements without transfers',
                                 lambda t, f=_mutate: f(t, False))
MUTANTS.update({
    'clear-no-guard': ('track', 'cmd_clear without its count == 0 guard',
                       lambda t: rep(t, '\tif (cmd->count == 0)\n\t\treturn;\n\tfor (', '\tfor (')),
    'clear-no-zero': ('track', 'cmd_clear does not zero the count',
                      lambda t: rep(t, '\tcmd->count = 0;\n\tatomic_fetch_sub', '\tatomic_fetch_sub')),
    'pool-reset-any-pool': ('track', 'pool reset clears every pool\'s command buffers',
                            lambda t: rep(t, POOL_RESET, POOL_RESET.replace(
                                'if (cmd->pool == pool)', 'if (cmd->pool == pool || true)'))),
    'pool-destroy-any-pool': ('track', 'pool destroy removes every pool\'s command buffers',
                              lambda t: rep(t, '\t\t\tif (cmd && cmd->pool == pool) {',
                                            '\t\t\tif (cmd) {')),
    'skip-le-1': ('submit', 'submit skips while the count is <= 1',
                  lambda t: rep(t, 'memory_order_acquire) == 0)', 'memory_order_acquire) <= 1)')),
    'identity': ('track', 'unmutated, same build path', lambda t: t),
})

GUEST = r"""#!/bin/sh
# Generated by tests/layer/xfer_count_mutants.py: runs in the guest.
cd %(build)s || exit 1
cp %(so)s /tmp/real.so
for m in "$@"; do
	cp %(out)s/$m/libVkLayer_SYNCBRIDGE_implicit_sync.so %(so)s
	out=$(tests/layer/layer-acquire-drops 2>&1); rc=$?
	fails=$(echo "$out" | sed -n 's/^not ok .*) \([a-z0-9-]*\): .*/\1/p' | tr '\n' ' ')
	echo "MUTANT $m rc=$rc failing: $fails"
	echo "$out" | grep -E '^Bail|^# .*cases' | sed 's/^/    /'
done
cp /tmp/real.so %(so)s
"""


def build(args, names):
    bdir = os.path.abspath(args.build)
    cmds = json.load(open(os.path.join(bdir, 'compile_commands.json')))
    link = subprocess.run(['ninja', '-C', bdir, '-t', 'commands', LAYER_SO], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    os.makedirs(args.out, exist_ok=True)
    for name in names:
        which, _, mutate = MUTANTS[name]
        src = os.path.join(SRC, 'layer', which + '.c')
        entry = next(e for e in cmds if os.path.normpath(os.path.join(bdir, e['file'])) == src
                     and LAYER_SO in e['output'])
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        text = mutate(open(src).read())
        msrc, mobj = os.path.join(d, which + '.c'), os.path.join(d, which + '.o')
        open(msrc, 'w').write(text)
        argv = shlex.split(entry['command'])
        out = []
        skip = 0
        for a in argv:
            if skip:
                skip -= 1
                continue
            if a in ('-MD',):
                continue
            if a in ('-MQ', '-MF', '-o', '-c'):
                skip = 1
                continue
            out.append(a)
        # The copy lives elsewhere: "layer.h" comes through -I../layer.
        subprocess.run(out + ['-Werror', '-c', msrc, '-o', mobj], cwd=bdir, check=True)
        larg = shlex.split(link)
        larg = [mobj if a.endswith('/%s.c.o' % which) else a for a in larg]
        larg[larg.index('-o') + 1] = os.path.join(d, os.path.basename(LAYER_SO))
        subprocess.run(larg, cwd=bdir, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(SRC, 'build'))
    ap.add_argument('--out')
    ap.add_argument('--no-run', action='store_true')
    ap.add_argument('mutants', nargs='*')
    args = ap.parse_args()
    args.out = os.path.abspath(args.out or os.path.join(
        os.path.dirname(os.path.abspath(args.build)), 'build-xfer-mutants'))
    names = args.mutants or list(MUTANTS)
    for n in names:
        if n not in MUTANTS:
            sys.exit('unknown mutant %s (%s)' % (n, ' '.join(MUTANTS)))
    try:
        build(args, names)
    except Stale as e:
        print('a mutant no longer applies (layer source changed near: %s)' % e)
        return 2
    if args.no_run:
        print('built %d mutants in %s' % (len(names), args.out))
        return 0

    bdir = os.path.abspath(args.build)
    script = os.path.join(args.out, 'guest-run.sh')
    open(script, 'w').write(GUEST % {'build': bdir, 'so': LAYER_SO, 'out': args.out})
    res = subprocess.run([os.path.join(SRC, 'scripts', 'vm', 'vm-run.sh'), '--timeout', '900',
                          '--', 'sh', script] + names, capture_output=True, text=True)
    sys.stdout.write(res.stdout)
    got = {m.group(1): m.group(2).split()
           for m in re.finditer(r'^MUTANT (\S+) rc=\d+ failing: *(.*)$', res.stdout, re.M)}
    ok = len(got) == len(names)
    print('\n| mutant | failing cases |\n| --- | --- |')
    for n in names:
        fails = got.get(n)
        desc = MUTANTS[n][1]
        print('| %s (%s) | %s |' % (n, desc, 'not run' if fails is None else
                                    ', '.join(fails) or '- (passes)'))
        if fails is None or (n == 'identity') != (not fails):
            ok = False
    print('mutation check: %s' % ('every mutant caught, identity passes' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
