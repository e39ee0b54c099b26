#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs BEFORE and AFTER (the prometheus-cpp daemon and its percpu port)
with the same ARGS and checks, as TAP, that their text expositions hold the
same HELP and TYPE lines and the same series (name and labels, in any
order) with the same values. prometheus-cpp sums doubles, percpu integers
divided by the scale once, so a _sum may differ by rounding: values are
equal within a relative 1e-9."""
import math
import re
import subprocess
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    meta, samples = set(), {}
    for line in text.splitlines():
        if line.startswith('# HELP ') or line.startswith('# TYPE '):
            meta.add(line)
            continue
        if not line or line.startswith('#'):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError('not a sample: %r' % line)
        labels = tuple(sorted(LABEL.findall(m.group(2) or '')))
        key = (m.group(1), labels)
        if key in samples:
            raise ValueError('series twice: %r' % line)
        samples[key] = float(m.group(3))
    return meta, samples


def main():
    before, after, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    out = {}
    for name, exe in (('before', before), ('after', after)):
        out[name] = parse(subprocess.run([exe] + args, check=True, capture_output=True,
                                         text=True).stdout)
    (meta_b, samples_b), (meta_a, samples_a) = out['before'], out['after']
    checks = []
    checks.append(('HELP and TYPE lines are the same', meta_b == meta_a,
                   sorted(meta_b ^ meta_a)))
    checks.append(('the same series (%d)' % len(samples_b),
                   samples_b.keys() == samples_a.keys() and len(samples_b) > 0,
                   sorted(set(samples_b) ^ set(samples_a))))
    differ = [(k, samples_b[k], samples_a[k]) for k in samples_b.keys() & samples_a.keys()
              if not math.isclose(samples_b[k], samples_a[k], rel_tol=1e-9)]
    checks.append(('the same values', not differ, differ[:10]))
    print('TAP version 13')
    print('1..%d' % len(checks))
    for i, (what, ok, detail) in enumerate(checks, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
        if not ok:
            print('# %r' % (detail,))
    return 0 if all(c[1] for c in checks) else 1


if __name__ == '__main__':
    sys.exit(main())
