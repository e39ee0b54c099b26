#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The section 3 man pages cover the API, and every SYNOPSIS compiles.

usage: check-man-pages.py CC INCLUDE-DIR GENERATOR MAN3-DIR VERSION
                          [--page PAGE ...] [--cxx CXX] [LIBRARY.so ...]

MAN3-DIR holds the built pages (-Ddocs=enabled); where it does not exist,
GENERATOR (docs/percpu-man.py) writes them into a temporary directory.
Each PAGE is a built page of another section (percpu(7), percpu-stat(1)).
Prints a TAP report:
- every public function of include/percpu/*.h (static/ and arch/ are
  internal; a "__" name is internal unless it has a /** */ comment),
  every documented function-like macro (`man PCPU_COUNTER_DEFINE`) and
  every symbol each LIBRARY exports (nm -D; __pcpu_* are the headers'
  internals) has a page, or a .so link to an existing page;
- every page's footer (the .TH line's source) is "percpu VERSION";
- no page has a generic name: each starts with pcpu_ or percpu_, or is a
  macro's PCPU_NAME;
- every page has the sections a C programmer looks for, includes only
  <percpu/NAME.h> headers, gives the link line of its library, and its
  SYNOPSIS compiles (-std=c11 -Wall -Werror, the includes and every
  prototype: a prototype that disagrees with the header is an error);
  the page of <percpu/metrics.hpp> (pcpu_cxx(3)) compiles with CXX,
  -std=c++17 -Wall -Werror (skipped without --cxx);
- every section 3 page that a page cites (these and the hand-written
  PAGEs) exists;
- every page renders without a warning (man --warnings), where man is
  installed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

METRICS_HEADERS = {'metrics.h', 'family.h', 'gauge.h', 'histogram.h', 'metrics_http.h',
                   'metrics_registry.h', 'metrics_testutil.h',
                   'counter_double.h', 'summary.h', 'metrics.hpp'}
FUNCTION_SECTIONS = ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'RETURN VALUE', 'ERRORS', 'SEE ALSO']
OVERVIEW_SECTIONS = ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'SEE ALSO']

results = []


def check(ok, what, diag=''):
    results.append((ok, what, diag))


def public_functions(inc):
    """Every function and exported variable the public headers declare."""
    names = {}
    hdir = os.path.join(inc, 'percpu')
    pat = re.compile(r'^(?:PCPU_EXPORT|PCPU_INLINE|static inline)\b[^;{(]*?(\w+)\s*[(;]', re.M)
    for h in sorted(os.listdir(hdir)):
        if not h.endswith('.h'):
            continue
        src = open(os.path.join(hdir, h), encoding='utf-8').read()
        for m in pat.finditer(src):
            before = src[:m.start()].rstrip()
            documented = before.endswith('*/') and before[before.rfind('/*'):].startswith('/**')
            if m.group(1).startswith('__') and not documented:
                continue
            names[m.group(1)] = h
    return names


def public_macros(inc):
    """Every function-like macro of the public headers with a /** */ comment."""
    names = {}
    hdir = os.path.join(inc, 'percpu')
    for h in sorted(os.listdir(hdir)):
        if not h.endswith('.h'):
            continue
        src = open(os.path.join(hdir, h), encoding='utf-8').read()
        for m in re.finditer(r'^#define\s+([A-Za-z]\w*)\(', src, re.M):
            before = src[:m.start()].rstrip()
            if before.endswith('*/') and before[before.rfind('/*'):].startswith('/**'):
                names[m.group(1)] = h
    return names


def footer(text):
    """The source argument of a page's .TH line (its footer's middle)."""
    m = re.search(r'^\.TH\s+(.*)$', text, re.M)
    args = roff_args(m.group(1)) if m else []
    return args[3] if len(args) > 3 else None


def exported(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True,
                         check=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] != 'A' and not f[2].startswith('__pcpu_'):
            syms.add(f[2].split('@')[0])
    return syms


def page_file(mandir, name):
    """The file a page name opens, following one .so link; None if none."""
    path = os.path.join(mandir, name + '.3')
    if not os.path.isfile(path):
        return None
    first = open(path, encoding='utf-8').readline()
    m = re.match(r'\.so\s+(\S+)', first)
    if m:
        target = os.path.join(os.path.dirname(mandir), m.group(1))
        return target if os.path.isfile(target) else None
    return path


def roff_args(s):
    """The arguments of a roff macro line."""
    args, i = [], 0
    while i < len(s):
        if s[i] == ' ':
            i += 1
        elif s[i] == '"':
            j = i + 1
            cur = ''
            while j < len(s):
                if s[j] == '"' and s[j + 1:j + 2] == '"':
                    cur += '"'
                    j += 2
                elif s[j] == '"':
                    break
                else:
                    cur += s[j]
                    j += 1
            args.append(cur)
            i = j + 1
        else:
            j = s.find(' ', i)
            j = len(s) if j < 0 else j
            args.append(s[i:j])
            i = j
    return args


def unroff(s):
    s = re.sub(r'\\f[BIRP]', '', s)
    return s.replace('\\-', '-').replace('\\e', '\\').replace('\\&', '').replace('\\%', '')


def sections(text):
    return re.findall(r'^\.SH\s+"?([^"\n]*)"?', text, re.M)


def synopsis_c(text):
    """The C of a SYNOPSIS: its .nf block, fonts removed."""
    m = re.search(r'^\.SH SYNOPSIS\n(.*?)^\.SH', text, re.M | re.S)
    if not m:
        return None, []
    lines, code, in_nf = [], [], False
    for l in m.group(1).split('\n'):
        if l == '.nf':
            in_nf = True
        elif l == '.fi':
            in_nf = False
        elif in_nf and l.startswith('.'):
            mac, _, rest = l.partition(' ')
            if mac in ('.B', '.I'):
                code.append(unroff(' '.join(roff_args(rest))))
            elif mac in ('.BI', '.IB', '.BR', '.RB', '.IR', '.RI'):
                code.append(unroff(''.join(roff_args(rest))))
        elif in_nf:
            code.append(unroff(l))
        lines.append(l)
    return '\n'.join(code) + '\n', lines


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    cc, inc, generator, mandir, version = sys.argv[1:6]
    args = sys.argv[6:]
    others = [args[i + 1] for i, a in enumerate(args) if a == '--page']
    cxx = [args[i + 1] for i, a in enumerate(args) if a == '--cxx']
    cxx = cxx[0] if cxx else None
    libs = [a for i, a in enumerate(args)
            if a not in ('--page', '--cxx') and (i == 0 or args[i - 1] not in ('--page', '--cxx'))]
    tmp = tempfile.mkdtemp(prefix='percpu-man-')
    try:
        if not os.path.isdir(mandir):
            mandir = os.path.join(tmp, 'man3')
            r = subprocess.run([sys.executable, generator, inc, mandir, version],
                               capture_output=True, text=True)
            check(r.returncode == 0, 'the generator writes the pages', r.stderr)
            if r.returncode:
                return report()
        names = public_functions(inc)
        missing = sorted(n for n in names if not page_file(mandir, n))
        check(not missing, 'each of the %d public functions of the headers has a page'
              % len(names), 'no page: ' + ' '.join(missing))
        macros = public_macros(inc)
        missing = sorted(n for n in macros if not page_file(mandir, n))
        check(macros and not missing, 'each of the %d documented function-like macros has a page'
              % len(macros), 'no page: ' + ' '.join(missing))
        for lib in libs:
            syms = exported(lib)
            missing = sorted(s for s in syms if not page_file(mandir, s))
            check(syms and not missing, 'each of the %d symbols %s exports has a page'
                  % (len(syms), os.path.basename(lib)), 'no page: ' + ' '.join(missing))
        pages = sorted(p[:-2] for p in os.listdir(mandir) if p.endswith('.3'))
        generic = [p for p in pages
                   if not re.match(r'(__)?(pcpu|percpu)_\w+$', p) and p not in macros]
        check(not generic, 'no page has a generic name (%d pages)' % len(pages),
              'generic: ' + ' '.join(generic))
        for p in pages:
            path = os.path.join(mandir, p + '.3')
            text = open(path, encoding='utf-8').read()
            if text.startswith('.so '):
                check(page_file(mandir, p) is not None, '%s(3) links to a page' % p,
                      text.strip())
                continue
            check_page(p, text, cc, inc, tmp, cxx)
        want = 'percpu ' + version
        stale = []
        for path in [os.path.join(mandir, p + '.3') for p in pages] + others:
            text = open(path, encoding='utf-8').read()
            if not text.startswith('.so ') and footer(text) != want:
                stale.append('%s: "%s"' % (os.path.basename(path), footer(text)))
        check(others and not stale, 'the footer of each of the %d pages and %s says "%s"'
              % (len(pages), ', '.join(os.path.basename(o) for o in others), want),
              '\n'.join(stale))
        cited = []
        for path in [os.path.join(mandir, p + '.3') for p in pages] + others:
            text = open(path, encoding='utf-8').read()
            for name in re.findall(r'^\.BR\s+(?:\\%)?(\S+)\s+\(3\)', text, re.M):
                name = unroff(name)
                if re.match(r'_*(pcpu|percpu)_', name) and not page_file(mandir, name):
                    cited.append('%s cites %s(3)' % (os.path.basename(path), name))
        check(not cited, 'every page of the library that a page cites exists',
              '\n'.join(sorted(set(cited))))
        man = shutil.which('man')
        for p in pages:
            if not man:
                results.append((None, '%s(3) renders without a warning # SKIP no man' % p, ''))
                continue
            r = subprocess.run([man, '--warnings', '-E', 'UTF-8', '-l', 'man3/%s.3' % p],
                               cwd=os.path.dirname(mandir), capture_output=True, text=True,
                               env=dict(os.environ, LC_ALL='C.UTF-8', MANWIDTH='80'))
            check(r.returncode == 0 and not r.stderr.strip(),
                  '%s(3) renders without a warning' % p, r.stderr)
        for path in others:
            f = os.path.basename(path)
            if not man:
                results.append((None, '%s renders without a warning # SKIP no man' % f, ''))
                continue
            r = subprocess.run([man, '--warnings', '-E', 'UTF-8', '-l', f],
                               cwd=os.path.dirname(path),
                               capture_output=True, text=True,
                               env=dict(os.environ, LC_ALL='C.UTF-8', MANWIDTH='80'))
            check(r.returncode == 0 and not r.stderr.strip(),
                  '%s renders without a warning' % f, r.stderr)
    finally:
        shutil.rmtree(tmp)
    return report()


def check_page(p, text, cc, inc, tmp, cxx):
    code, _ = synopsis_c(text)
    includes = re.findall(r'#include <([^>]+)>', code or '')
    overview = '.SS Functions' in text or not re.search(r'\w\(.*\);', code or '')
    want = OVERVIEW_SECTIONS if overview else FUNCTION_SECTIONS
    have = sections(text)
    check(all(s in have for s in want), '%s(3) has the sections %s' % (p, ', '.join(want)),
          'sections: %s' % have)
    bad = [i for i in includes if not re.match(r'percpu/\w+\.h$|percpu/metrics\.hpp$', i)]
    check(includes and not bad, '%s(3) includes <percpu/NAME.h> only' % p,
          'includes: %s' % includes)
    metrics = any(os.path.basename(i) in METRICS_HEADERS for i in includes)
    want_pc = 'percpu-metrics' if metrics else 'percpu'
    links = re.findall(r'pkg\\-config \\-\\-cflags \\-\\-libs ([\w\\-]+)', text)
    links = [l.replace('\\-', '-') for l in links]
    check(links == [want_pc], '%s(3) says to link with pkg-config %s' % (p, want_pc),
          'link lines: %s' % links)
    if 'percpu/metrics.hpp' in includes:
        if not cxx:
            results.append((None, '%s(3) SYNOPSIS compiles # SKIP no C++ compiler' % p, ''))
            return
        src = os.path.join(tmp, p + '.cpp')
        cmd = [cxx, '-std=c++17', '-Wall', '-Werror', '-fsyntax-only', '-I', inc, src]
    else:
        src = os.path.join(tmp, p + '.c')
        cmd = [cc, '-std=c11', '-Wall', '-Werror', '-fsyntax-only', '-I', inc, src]
    with open(src, 'w', encoding='utf-8') as f:
        f.write(code or '')
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(code is not None and r.returncode == 0, '%s(3) SYNOPSIS compiles' % p,
          (code or '') + r.stderr)


def report():
    print('1..%d' % len(results))
    failed = 0
    for k, (ok, what, diag) in enumerate(results, 1):
        if ok is None:
            print('ok %d - %s' % (k, what))
            continue
        print('%s %d - %s' % ('ok' if ok else 'not ok', k, what))
        if not ok:
            failed += 1
            for l in diag.strip().split('\n'):
                print('# ' + l)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
