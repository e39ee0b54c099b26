#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The map points at real places: every repository path cited exists.

Reads the comments of the tree's sources (.c, .h, .cpp, .py, .sh, meson.build:
every file git tracks with those names), every installed or generated
header (they are sources too), README.md, the current section of NEWS.md
(up to its second "## " heading), docs/*.md and the hand-written man pages
(docs/*.1, docs/*.7 and their templates docs/*.1.in, docs/*.7.in), and
takes from them:

  - a path: a word with a slash whose first part is a folder of the tree
    (lib/, metrics/, include/, test/, docs/, tools/, debian/, examples/,
    bench/, abi/, adopters/, .ci/), of lib/ (base/, counter/, ...), of
    metrics/ (list/, kinds/, ...) or of include/percpu/ (arch/, static/,
    percpu/), ending in a file's extension or in a slash;
  - a bare file name with a C extension (metric_names.c).

Installed paths: a document cited where it is installed,
/usr/share/doc/libpercpu-dev/NAME (Debian's libpercpu-dev) or
PREFIX/share/doc/percpu/NAME (meson install), must be docs/NAME, installed
by docs/meson.build's install_data into DATADIR/doc/percpu, and moved by
debian/libpercpu-dev.install from usr/share/doc/percpu/NAME to
usr/share/doc/libpercpu-dev/, where debian/rules keeps it uncompressed
(dh_compress -XNAME): the path a reader is sent to is the file's.

A path must name a tracked file or folder, read from the tree's root, from
lib/, metrics/, include/, include/percpu/ or the citing file's folder; a bare
name must be some tracked file's name. What another project's tree holds
(the kernel's, librseq's) is allowed where ALLOWLIST lists the citing file
and the path; an entry that no longer occurs fails too, so the list only
shrinks. Files git does not track (a build folder) are not read; outside a
git checkout (a tarball) every file is, but a build folder's.

usage: check-paths.py SOURCE-ROOT ALLOWLIST     Prints a TAP report.
"""
import os
import re
import subprocess
import sys

root, allowlist = sys.argv[1], sys.argv[2]

TOP = ('lib', 'metrics', 'include', 'test', 'docs', 'tools', 'debian', 'examples', 'bench',
       'abi', 'adopters', r'\.ci', 'base', 'arena', 'registry', 'counter', 'stat', 'charge',
       'shared', 'list', 'kinds', 'format', 'http', 'arch', 'static', 'percpu')
EXT = r'(?:c|h|cpp|py|sh|md|map|build|txt|proto|json|in|wrap|pc|cmake|[137]|abi|options)'
PATH = re.compile(r'(?<![\w./<>@:-])((?:%s)/(?:[\w.+-]+/)*(?:[\w+-]+\.%s(?![\w/-])|(?<=/)(?![\w.+-])))'
                  % ('|'.join(TOP), EXT))
BARE = re.compile(r'(?<![\w./<>@:-])([\w-]+\.[ch])(?![\w/-])')
BASES = ('', 'lib', 'metrics', 'include', 'include/percpu')
# roff writes a hyphen as \- (the man page templates)
INSTALLED = re.compile(r'(/usr/share/doc/libpercpu\\?-dev|PREFIX/share/doc/percpu)/([\w.-]*\w)')


def tracked():
    """The tree's files: git's list, or (a tarball) every file but build folders'."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout.split('\n')
        if any(out):
            return [f for f in out if f and os.path.exists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    out = []
    for d, subdirs, names in os.walk(root):
        # a build folder (meson's, debian's obj-*), git's, quilt's
        subdirs[:] = [s for s in subdirs if not s.startswith('.') or s == '.ci']
        subdirs[:] = [s for s in subdirs
                      if not os.path.exists(os.path.join(d, s, 'meson-private'))]
        out += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return out


files = tracked()
known = set(files)
for f in files:
    while '/' in f:
        f = f.rsplit('/', 1)[0]
        known.add(f)
names = {os.path.basename(f) for f in files}


def comments(text, kind):
    """(line, text) of each comment of @text, a source of @kind."""
    if kind == 'c':
        pat = r'/\*.*?\*/|//[^\n]*'
    else:
        pat = r'#[^\n]*'
    return [(text.count('\n', 0, m.start()) + 1, m.group(0))
            for m in re.finditer(pat, text, re.S)]


def readable(f):
    """The (line, text) pieces of @f that cite paths; None: not read."""
    text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
    if f.endswith(('.c', '.h', '.cpp')):
        return comments(text, 'c')
    if f.endswith(('.py', '.sh')) or os.path.basename(f) == 'meson.build':
        return comments(text, 'sh')
    if f == 'NEWS.md':
        heads = [m.start() for m in re.finditer(r'^## ', text, re.M)]
        end = heads[1] if len(heads) > 1 else len(text)
        return [(1, text[:end])]
    if f == 'README.md' or re.match(r'docs/[^/]+\.(md|[137])(\.in)?$', f):
        return [(1, text)]
    return None


def exists(path, f):
    path = path.rstrip('/')
    here = os.path.dirname(f)
    for base in BASES + (here, os.path.dirname(here)):
        if os.path.normpath(os.path.join(base, path)) in known:
            return True
    return False


allowed = set()
for line in open(allowlist, encoding='utf-8'):
    line = line.split('#', 1)[0].split()
    if len(line) == 2:
        allowed.add(tuple(line))

def read(f):
    try:
        return open(os.path.join(root, f), encoding='utf-8').read()
    except OSError:
        return ''


def calls(text, fn):
    """The arguments of each call of @fn in the meson file @text."""
    out = []
    for m in re.finditer(r'\b%s\(' % fn, text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {'(': 1, ')': -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i - 1])
    return out


def not_installed(where, name):
    """Why the document @name cited as installed in @where is not; '' if it is."""
    if 'docs/' + name not in known:
        return 'no docs/' + name
    if not any("'%s'" % name in call and "'doc' / 'percpu'" in call
               for call in calls(read('docs/meson.build'), 'install_data')):
        return "docs/meson.build does not install_data() it into DATADIR/doc/percpu"
    if where.startswith('/usr') and 'debian/rules' in known:
        lines = [l.split() for l in read('debian/libpercpu-dev.install').splitlines()]
        if ['usr/share/doc/percpu/' + name, 'usr/share/doc/libpercpu-dev/'] not in lines:
            return 'debian/libpercpu-dev.install does not move it to usr/share/doc/libpercpu-dev/'
        if not re.search(r'dh_compress\b[^\n]*-X%s\b' % re.escape(name), read('debian/rules')):
            return 'debian/rules compresses it (dh_compress without -X%s)' % name
    return ''


dead, used, uninstalled, claims = [], set(), [], 0
for f in files:
    pieces = readable(f)
    if pieces is None:
        continue
    for first, text in pieces:
        for m in INSTALLED.finditer(text):
            claims += 1
            why = not_installed(m.group(1), m.group(2))
            if why:
                line = first + text.count('\n', 0, m.start())
                uninstalled.append('%s:%d: %s: %s' % (f, line, m.group(0), why))
        for pat in (PATH, BARE):
            for m in pat.finditer(text):
                cited = m.group(1)
                ok = exists(cited, f) if pat is PATH else cited in names
                if ok:
                    continue
                if (f, cited) in allowed:
                    used.add((f, cited))
                    continue
                line = first + text.count('\n', 0, m.start())
                dead.append('%s:%d: %s' % (f, line, cited))

results = [
    (not dead, 'every repository path cited exists', dead),
    (used == allowed, 'every allowlist entry still occurs (the list only shrinks)',
     ['%s %s' % e for e in sorted(allowed - used)]),
    (claims > 0 and not uninstalled,
     'every installed path cited (%d) is where meson and debian/ install it' % claims,
     uninstalled or ([] if claims else ['no installed path cited'])),
]
print('1..%d' % len(results))
for i, (ok, what, diag) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    for d in sorted(set(diag)):
        print('# ' + d)
sys.exit(0 if all(ok for ok, _, _ in results) else 1)
