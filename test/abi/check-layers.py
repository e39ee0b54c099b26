#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The floors of the tree, from its folders, and the circles between files.

Floors, lowest first (a file's folder says its floor):

  0 base      lib/base/, and the public headers it implements (common, arch,
              cpu, client's kinds): CPU and update path, atomics, policy, the
              fold engine, the name rules
  1 arena     lib/arena/: per-CPU memory
  2 registry  lib/registry/, <percpu/registry.h>, <percpu/client.h>: live
              objects, the refresher, fork, the client hook
  3 units     lib/counter/, lib/stat/, lib/charge/, lib/shared/, each with its
              public headers: one group each, none uses another's files
  the metrics library (libpercpu-metrics), above the whole core:
  4 list      metrics/list/, <percpu/metrics.h>, <percpu/metrics_registry.h>:
              the registered metrics and their walk, the metrics lock and
              the core's client, collectors, define failures, exemplars
  5 kinds     metrics/kinds/, <percpu/gauge.h>, <percpu/histogram.h>,
              <percpu/family.h>: the kinds of metric, each a source for the
              list (counters and stat items, gauges, histograms and their
              native buckets, label families, process metrics)
  6 format    metrics/format/: text, OpenMetrics, protobuf, shared segments
  7 http      metrics/http/, <percpu/metrics_http.h>: negotiation, gzip,
              the handler and the server
  8 testutil  metrics/testutil/, <percpu/metrics_testutil.h>: the testing
              helpers for users (compare, value, lint), which read back the
              text that format/ writes
  9 tools     tools/: percpu-stat, a program of the installed libraries'
              (tools/meson.build): it includes their public headers and its
              own, and calls what they export, as any user's program

A file uses another when it calls a function that the other defines (an
inline function in a header, or a non-static function in a .c), from inside
a function body, or stores a pointer to one: an initialiser or an
assignment that names it (.forget = pcpu_metrics_forget); a declaration is
not a use, nor is a function passed as an argument (a callback handed down
at run time, as pcpu_metrics_on_forget() takes the list's). So a header's
inline add that calls a slow path in a .c uses that .c. Includes are uses
of types, and a .c file that includes a header uses the .c of the same
name (native.c includes <percpu/histogram.h>: it uses histogram.c, whose
types it needs and whose floor it must therefore stand on). Checked:

  - every file has a floor (a new file is placed on purpose);
  - no call runs up a floor, nor into another unit except through its
    exported API; no quoted include runs up a floor or into another unit's
    files; nothing in lib/ or a core header includes a metrics header (the
    core knows nothing of metrics); no metrics file includes a public
    metrics header of a floor above its own;
  - metrics/ includes no private header of lib/ but base/names.h (the name
    rules, built into both libraries), and calls only what the core exports;
  - tools/ includes no private header of either library and calls only
    what the two export;
  - no circle: no two files use each other, directly or through others
    (Tarjan's strongly connected components over the calls, the stored
    pointers and the includes of a namesake's header; a public header and
    its namesake .c count as one file, the inline half of one unit),
    except the circles that ALLOWLIST names, "FILE FILE ..." a line (the circle's files,
    sorted): a list that only shrinks, an entry that is no circle any more
    fails too.

usage: check-layers.py SOURCE-ROOT [ALLOWLIST]      Prints a TAP report.
"""
import os
import re
import sys

root = sys.argv[1]
allowlist = sys.argv[2] if len(sys.argv) > 2 else None

UNITS = ('counter', 'stat', 'charge', 'shared')
# public headers: name -> (floor, group); static/ ones follow their header
PUBLIC = {
    'common.h': (0, 'base'), 'arch.h': (0, 'base'), 'cpu.h': (0, 'base'), 'owner.h': (0, 'base'),
    'client.h': (2, 'registry'), 'registry.h': (2, 'registry'),
    'counter.h': (3, 'counter'), 'counter_bound.h': (3, 'counter'),
    'percpu_counter.h': (3, 'counter'),
    'stat.h': (3, 'stat'), 'charge.h': (3, 'charge'), 'shared.h': (3, 'shared'),
    'metrics.h': (4, 'list'), 'metrics_registry.h': (4, 'list'),
    'family.h': (5, 'kinds'), 'gauge.h': (5, 'kinds'), 'histogram.h': (5, 'kinds'),
    'counter_double.h': (5, 'kinds'),
    'summary.h': (5, 'kinds'),
    'metrics_http.h': (7, 'http'),
    'metrics_testutil.h': (8, 'testutil'),
}
FOLDERS = {'base': 0, 'arena': 1, 'registry': 2}
# the metrics library's floors: their folders under metrics/
METRICS = {'list': 4, 'kinds': 5, 'format': 6, 'http': 7, 'testutil': 8}
TOOLS = 9


def floor_of(rel):
    parts = rel.split('/')
    if parts[0] == 'lib' and len(parts) == 3:
        if parts[1] in FOLDERS:
            return FOLDERS[parts[1]], parts[1]
        if parts[1] in UNITS:
            return 3, parts[1]
        return None
    if parts[0] == 'metrics':
        if len(parts) == 3 and parts[1] in METRICS:
            return METRICS[parts[1]], parts[1]
        return None
    if parts[0] == 'tools' and len(parts) == 2:
        return TOOLS, 'tools'
    if rel.startswith('include/percpu/arch/'):
        return 0, 'base'
    if rel.startswith('include/percpu/'):
        return PUBLIC.get(parts[-1])
    return None


def sources():
    out = []
    for top in ('lib', 'metrics', 'include/percpu', 'tools'):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(('.c', '.h')):
                    out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def strip(text):
    """The text without comments and string literals (lines kept)."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


# a definition: a line at column 0 that ends in ')' (its declarator),
# the next line '{'
DEF = re.compile(r'^([A-Za-z_][^;{}()\n]*?)\b([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*\n\{', re.M)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
INCLUDE = re.compile(r'^#\s*include\s*([<"])([^">]+)[">]', re.M)
# a pointer stored: "= name" (not ==, <=, ...) ending the value
STORE = re.compile(r'(?<![=!<>+\-*/%&|^])=\s*&?\s*([A-Za-z_]\w*)\s*(?=[,;}])')
KEYWORDS = {'if', 'for', 'while', 'switch', 'return', 'sizeof', 'defined', '__attribute__',
            '__typeof__', 'typeof', '_Static_assert', 'asm', '__asm__', '_Alignof'}

files = sources()
text = {f: strip(open(os.path.join(root, f), encoding='utf-8').read()) for f in files}
raw = {f: open(os.path.join(root, f), encoding='utf-8').read() for f in files}

defined_in = {}   # function -> file, for functions other files can call
local = {}        # file -> its own functions
bodies = {}       # file -> the text of its function bodies
for f in files:
    local[f] = set()
    bodies[f] = []
    for m in DEF.finditer(text[f]):
        head, name = m.group(1), m.group(2)
        local[f].add(name)
        depth, i = 0, m.end() - 1
        while i < len(text[f]):
            depth += {'{': 1, '}': -1}.get(text[f][i], 0)
            if depth == 0:
                break
            i += 1
        bodies[f].append(text[f][m.end():i])
        if f.endswith('.c') and re.search(r'\bstatic\b', head):
            continue
        defined_in.setdefault(name, f)


def resolve(f, kind, name):
    if kind == '<':
        return 'include/' + name if name.startswith('percpu/') else None
    for base in (os.path.dirname(f), 'lib', 'metrics'):
        cand = os.path.normpath(os.path.join(base, name))
        if cand in text:
            return cand
    return None


edges = {f: {} for f in files}      # f -> {g: why}: the calls
includes = {f: {} for f in files}   # f -> {g: how}
for f in files:
    for m in INCLUDE.finditer(raw[f]):
        g = resolve(f, m.group(1), m.group(2))
        if g and g != f:
            includes[f].setdefault(g, m.group(1))
    for m in CALL.finditer('\n'.join(bodies[f])):
        name = m.group(1)
        if name in KEYWORDS or name in local[f]:
            continue
        g = defined_in.get(name)
        if g and g != f:
            edges[f].setdefault(g, 'calls ' + name + '()')
    for m in STORE.finditer(text[f]):
        name = m.group(1)
        if name in local[f]:
            continue
        g = defined_in.get(name)
        if g and g != f:
            edges[f].setdefault(g, 'stores ' + name + '()')

# a .c file's include of a header uses the .c of the header's name: in
# the header's folder, or for a public header anywhere (circles only: the
# include itself is checked as an include below)
uses = {f: dict(edges[f]) for f in files}
namesakes = {}
for f in files:
    if f.endswith('.c'):
        namesakes.setdefault(os.path.basename(f)[:-2], []).append(f)
for f in files:
    if not f.endswith('.c'):
        continue
    for g in includes[f]:
        for c in namesakes.get(os.path.basename(g)[:-2], []) if g.endswith('.h') else []:
            if c != f and (g.startswith('include/') or os.path.dirname(c) == os.path.dirname(g)):
                uses[f].setdefault(c, 'includes ' + g)

# a public header and its namesake .c are one unit, split only because
# the header's inline fast path must be compiled into programs: its calls
# into its .c's slow path, and the .c's calls of its inline functions,
# make no circle
for f in files:
    for g in list(uses[f]):
        h, c = (f, g) if f.endswith('.h') else (g, f)
        if (h.startswith('include/percpu/') and h.endswith('.h') and c.endswith('.c') and
                os.path.basename(h)[:-2] == os.path.basename(c)[:-2]):
            del uses[f][g]


def exports(mapfile):
    out = set()
    for line in open(os.path.join(root, mapfile), encoding='utf-8'):
        m = re.match(r'\s+([A-Za-z_]\w*);', line)
        if m:
            out.add(m.group(1))
    return out


exported = exports('lib/libpercpu.map')
exported_metrics = exports('metrics/libpercpu-metrics.map')

def is_metrics(group):
    return group in METRICS


results = []
for f in files:
    fl = floor_of(f)
    if fl is None:
        results.append((False, f + ' has no floor in check-layers.py'))
        continue
    bad = []
    for g, how in sorted(includes[f].items()):
        gl = floor_of(g)
        if gl is None:
            continue
        if fl[1] == 'tools':
            if not g.startswith(('include/percpu/', 'tools/')):
                bad.append('includes %s (a private header of a library)' % g)
        elif how == '<':
            if is_metrics(gl[1]) and not is_metrics(fl[1]):
                bad.append('includes %s (the core knows nothing of metrics)' % g)
            elif is_metrics(fl[1]) and gl[0] > fl[0]:
                bad.append('includes %s (floor %d above %d)' % (g, gl[0], fl[0]))
        elif is_metrics(fl[1]) and g.startswith('lib/'):
            if g != 'lib/base/names.h':
                bad.append('includes %s (a private header of the core)' % g)
        elif gl[0] > fl[0]:
            bad.append('includes %s (floor %d above %d)' % (g, gl[0], fl[0]))
        elif gl[0] == 3 and fl[0] == 3 and gl[1] != fl[1]:
            bad.append('includes %s (unit %s, not %s)' % (g, gl[1], fl[1]))
    for g, why in sorted(edges[f].items()):
        gl = floor_of(g)
        name = why.split(' ')[1].rstrip('()')
        if gl is None:
            continue
        if fl[1] == 'tools':
            if not g.startswith('tools/') and name not in exported | exported_metrics:
                bad.append('%s %s (not exported by the libraries)' % (why, g))
        elif is_metrics(fl[1]) and g.startswith('lib/'):
            if name not in exported and g != 'lib/base/names.c':
                bad.append('%s %s (not exported by the core)' % (why, g))
        elif gl[0] > fl[0]:
            bad.append('%s in %s (floor %d above %d)' % (why, g, gl[0], fl[0]))
        elif gl[0] == 3 and fl[0] == 3 and gl[1] != fl[1] and name not in exported:
            bad.append('%s in %s (unit %s, not exported)' % (why, g, gl[1]))
    if bad:
        results.append((False, '%s (floor %d, %s) uses: %s' % (f, fl[0], fl[1], '; '.join(bad))))
    else:
        results.append((True, '%s: floor %d (%s)' % (f, fl[0], fl[1])))

# circles: Tarjan's strongly connected components over every edge
index, low, stack, on, comps = {}, {}, [], set(), []
sys.setrecursionlimit(10000)


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in uses[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        comps.append(sorted(comp))


for v in files:
    if v not in index:
        visit(v)
allowed = set()
for line in open(allowlist, encoding='utf-8') if allowlist else ():
    line = line.split('#', 1)[0].split()
    if line:
        allowed.add(tuple(sorted(line)))
circles = [c for c in comps if len(c) > 1]
for c in circles:
    loop = '; '.join('%s -> %s' % (a, ', '.join('%s [%s]' % (b, uses[a][b])
                                                for b in sorted(uses[a]) if b in c))
                     for a in c)
    known = tuple(c) in allowed
    results.append((known, 'a circle of %d files%s: %s' % (
        len(c), ' (allowed: layers-allow.txt)' if known else '', loop)))
if not circles:
    results.append((True, 'no circle between the %d files' % len(files)))
gone = sorted(allowed - set(tuple(c) for c in circles))
results.append((not gone, 'every allowed circle is still one (the list only shrinks)%s' % (
    ': gone: ' + '; '.join(' '.join(c) for c in gone) if gone else '')))

print('1..%d' % len(results))
for i, (ok, msg) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, msg))
sys.exit(0 if all(ok for ok, _ in results) else 1)
