#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No function over 60 lines without a reason: docs/internals.md, [errno-sign].

Measures every function defined in the C of the libraries (lib/, metrics/,
include/), of the installed tool (tools/), of the examples users copy
(examples/) and of the benchmarks (bench/): .c and .h, comments and string
literals left out, so a "{" in a format is no brace. A function counts
from the line of its name to its closing brace. One longer than MAX lines
fails unless the comment right above it says why it is long (the word
"long" in it: "Long: one pass, because ..."), or ALLOWLIST names it: the
benchmarks' functions that were long when the check first read bench/,
"FILE FUNCTION" a line, a list that only shrinks (an entry
that no longer names a long function fails too).

usage: check-lengths.py SOURCE-ROOT [ALLOWLIST [MAX]]      Prints a TAP report.
"""
import os
import re
import sys

root = sys.argv[1]
allowlist = sys.argv[2] if len(sys.argv) > 2 else None
MAX = int(sys.argv[3]) if len(sys.argv) > 3 else 60
TOPS = ('lib', 'metrics', 'include', 'tools', 'examples', 'bench')
DEF = re.compile(r'^([A-Za-z_][^;{}()\n]*?)\b([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*\n\{', re.M)


def blank(m):
    """@m's text with every character but newlines made a space."""
    return re.sub(r'[^\n]', ' ', m.group(0))


def strip(text):
    """Comments and string and character literals blanked, lines and columns kept."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', blank, text,
                  flags=re.S)


def reason_above(raw, start):
    """Whether the comment that ends right above offset @start says "long"."""
    head = raw[:start].rstrip()
    if not head.endswith('*/'):
        return False
    comment = head[head.rfind('/*'):]
    return re.search(r'\blong\b', comment, re.I) is not None


def functions(raw):
    """(name, first line, lines) of each function defined in @raw."""
    text = strip(raw)
    for m in DEF.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        first = text.count('\n', 0, m.start()) + 1
        yield m.group(2), first, text.count('\n', 0, i) + 2 - first, m.start()


def self_test():
    short = 'static int f(void)\n{\n\treturn "{";\n}\n'
    body = '\tx();\n' * (MAX + 1)
    long_ = 'static int g(void)\n{\n' + body + '}\n'
    why = '/* Long: one pass. */\n' + long_
    lens = [list(functions(t)) for t in (short, long_, why)]
    return (lens[0][0][2] == 4 and lens[1][0][2] == MAX + 4 and
            not reason_above(long_, lens[1][0][3]) and reason_above(why, lens[2][0][3]))


allowed = set()
for line in open(allowlist, encoding='utf-8') if allowlist else ():
    line = line.split('#', 1)[0].split()
    if len(line) == 2:
        allowed.add(tuple(line))

found, used = [], set()
for top in TOPS:
    for d, _, names in os.walk(os.path.join(root, top)):
        for n in sorted(names):
            if not n.endswith(('.c', '.h')):
                continue
            f = os.path.join(d, n)
            raw = open(f, encoding='utf-8').read()
            rel = os.path.relpath(f, root)
            for name, first, lines, start in functions(raw):
                if lines <= MAX or reason_above(raw, start):
                    continue
                if (rel, name) in allowed:
                    used.add((rel, name))
                    continue
                found.append('%s:%d: %s() is %d lines' % (rel, first, name, lines))
results = [(self_test(), 'the measure counts a function from its name to its brace', []),
           (not found, 'no function over %d lines without a reason' % MAX, sorted(found)),
           (used == allowed, 'every allowlist entry is still a long function (the list only '
            'shrinks)', ['%s %s' % e for e in sorted(allowed - used)])]
print('1..%d' % len(results))
for i, (ok, what, diag) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    for line in diag:
        print('# ' + line)
sys.exit(0 if all(ok for ok, _, _ in results) else 1)
