#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One sign for errors: docs/internals.md, [errno-sign].

A function that returns an int error returns 0 or a negative errno, static
helpers included; a constructor returns NULL and sets errno (positive, as
errno always is). Greps lib/, metrics/ and include/ (.c and .h, comments
and string literals left out) for a return whose value names an errno
constant without a minus sign (return EINVAL; return x ? EINVAL : ENOMEM;)
or returns errno itself (return errno;). A constant passed to a call is an
argument, not the value returned (return refuse(f, EINVAL): a helper that
sets errno and returns NULL).

usage: check-errno.py SOURCE-ROOT      Prints a TAP report.
"""
import errno
import os
import re
import sys

root = sys.argv[1]
NAMES = set(errno.errorcode.values())
RETURN = re.compile(r'\breturn\b([^;]*);')
TOKEN = re.compile(r'(-\s*)?\b(E[A-Z0-9]+|errno)\b')


def strip(text):
    """The text without comments and string or character literals (lines kept)."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def positive_returns(text):
    """(line, statement) of each return of a positive errno in @text."""
    out = []
    for m in RETURN.finditer(text):
        for t in TOKEN.finditer(m.group(1)):
            if t.group(2) != 'errno' and t.group(2) not in NAMES:
                continue
            if t.group(1):
                continue
            # an argument (refuse(f, EINVAL) sets errno and returns NULL)
            head = m.group(1)[:t.start()]
            if head.count('(') > head.count(')'):
                continue
            # errno = ... inside the expression is no return of it
            if t.group(2) == 'errno' and m.group(1).strip() != 'errno':
                continue
            line = text.count('\n', 0, m.start()) + 1
            out.append((line, ' '.join(('return' + m.group(1)).split())))
            break
    return out


def sources():
    for top in ('lib', 'metrics', 'include'):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(d, n), root)


def self_test():
    bad = ['return EINVAL;', 'return opts ? EINVAL : ENOMEM;', 'return errno;']
    good = ['return -EINVAL;', 'return x ? -EINVAL : -ENOMEM;', 'return -errno;',
            'return 0; /* EINVAL */', 'return "EINVAL";', 'return EOF;',
            'return refuse(f, EINVAL);']
    return (all(positive_returns(strip(b)) for b in bad) and
            not any(positive_returns(strip(g)) for g in good))


results = [(self_test(), 'the pattern finds positive errno returns and passes negative ones', '')]
found = []
for f in sorted(sources()):
    with open(os.path.join(root, f), encoding='utf-8') as fh:
        for line, stmt in positive_returns(strip(fh.read())):
            found.append('%s:%d: %s' % (f, line, stmt))
results.append((not found, 'every int error returned is a negative errno', '\n'.join(found)))

print('1..%d' % len(results))
for i, (ok, what, diag) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    for d in diag.splitlines():
        print('# ' + d)
sys.exit(0 if all(ok for ok, _, _ in results) else 1)
