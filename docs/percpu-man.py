#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Section 3 man pages from the public headers' Doxygen comments.

usage: percpu-man.py INCLUDE-DIR OUT-DIR [VERSION]

Writes into OUT-DIR (a man3 directory):
- a page per public function, or per group of related functions (GROUPS),
  with a `.so` link for every other name of the group, so that
  `man 3 NAME` opens a page for every function and exported variable;
- pcpu_cxx(3), the page of the C++ header <percpu/metrics.hpp>: its
  comment, and each class with its documented members;
- an overview page per header, named after the prefix its names share and
  the struct it is about (pcpu_counter(3) for <percpu/counter.h>,
  percpu_counter(3) for <percpu/percpu_counter.h>): the header's comment,
  its types, constants and macros, and its functions, with a `.so` link
  for each documented function-like macro. A page named after
  the header (counter.h(3)) would clash with other packages' pages.

A public function is one with a /** */ comment; a function of a public
header without one is an error unless its name starts with "__" (internal
to the headers). Python's standard library only.
"""
import errno
import os
import re
import sys

# What is not API: common.h and arch.h hold the headers' own macros.
SKIP_HEADERS = {'common.h', 'arch.h'}
# The headers of libpercpu-metrics; every other one is libpercpu's.
METRICS_HEADERS = {'metrics.h', 'family.h', 'gauge.h', 'histogram.h', 'metrics_http.h',
                   'metrics_registry.h', 'metrics_testutil.h',
                   'counter_double.h', 'summary.h'}
# Overview page of each header: the prefix of its names.
OVERVIEW = {
    'counter.h': 'pcpu_counter', 'percpu_counter.h': 'percpu_counter',
    'cpu.h': 'pcpu_cpu', 'registry.h': 'pcpu_registry', 'stat.h': 'pcpu_stat',
    'charge.h': 'pcpu_charge', 'shared.h': 'pcpu_shared', 'metrics.h': 'pcpu_metrics',
    'metrics_http.h': 'pcpu_metrics_http', 'family.h': 'pcpu_family',
    'gauge.h': 'pcpu_gauge', 'histogram.h': 'pcpu_histogram', 'client.h': 'pcpu_client',
    'metrics_registry.h': 'pcpu_metrics_registry',
    'metrics_testutil.h': 'pcpu_metrics_testutil',
    'counter_double.h': 'pcpu_counter_double',
    'summary.h': 'pcpu_summary',
}
# Functions that share a page: (page, what the NAME line says, members).
# A function in no group has a page of its own.
GROUPS = [
    ('pcpu_client_set', 'the hook of a library built on percpu: describe objects, register classes',
     'pcpu_client_set pcpu_registry_add pcpu_registry_remove'),
    ('pcpu_counter_init', 'initialise and destroy native per-CPU counters',
     'pcpu_counter_init pcpu_counter_init_opts pcpu_counter_init_many '
     'pcpu_counter_init_many_opts pcpu_counter_destroy pcpu_counter_destroy_many '
     'pcpu_counter_initialized pcpu_counter_default_floor'),
    ('pcpu_counter_add', 'add to a native per-CPU counter',
     'pcpu_counter_add pcpu_counter_add_batch'),
    ('pcpu_counter_read', 'read a native per-CPU counter, approximately or exactly',
     'pcpu_counter_read pcpu_counter_error_bound pcpu_counter_sum '
     'pcpu_counter_sync_if_delta_above pcpu_counter_fold_this_cpu'),
    ('pcpu_counter_compare', 'compare a native per-CPU counter with a value',
     'pcpu_counter_compare pcpu_counter_compare_value'),
    ('percpu_counter_init', 'initialise and destroy kernel-style per-CPU counters',
     'percpu_counter_init percpu_counter_init_many percpu_counter_init_elastic '
     'percpu_counter_init_many_elastic percpu_counter_destroy '
     'percpu_counter_destroy_many percpu_counter_initialized percpu_counter_batch'),
    ('percpu_counter_add', 'add to a kernel-style per-CPU counter',
     'percpu_counter_add percpu_counter_add_batch percpu_counter_add_local '
     'percpu_counter_sub percpu_counter_sub_local percpu_counter_inc percpu_counter_dec'),
    ('percpu_counter_read', 'read a kernel-style per-CPU counter',
     'percpu_counter_read percpu_counter_read_positive percpu_counter_sum '
     'percpu_counter_sum_positive __percpu_counter_sum percpu_counter_sync'),
    ('percpu_counter_compare', 'compare a kernel-style per-CPU counter with a value',
     'percpu_counter_compare __percpu_counter_compare'),
    ('percpu_counter_limited_add', 'add to a kernel-style per-CPU counter within a limit',
     'percpu_counter_limited_add __percpu_counter_limited_add'),
    ('pcpu_cpu_setup', 'the update path and the CPUs',
     'pcpu_cpu_setup pcpu_cpu_current pcpu_cpu_possible pcpu_cpu_online'),
    ('pcpu_registry_count', 'the registry of live counters',
     'pcpu_registry_count pcpu_registry_fold_all'),
    ('pcpu_refresher_start', 'fold every live counter in the background',
     'pcpu_refresher_start pcpu_refresher_stop'),
    ('pcpu_stat_create', 'create and destroy stat sets', 'pcpu_stat_create pcpu_stat_destroy'),
    ('pcpu_stat_read', 'read the items of a stat set',
     'pcpu_stat_read pcpu_stat_error_bound pcpu_stat_sum pcpu_stat_sync_if_delta_above '
     'pcpu_stat_snapshot pcpu_stat_fold_all'),
    ('pcpu_stat_count', 'the items of a stat set',
     'pcpu_stat_count pcpu_stat_name pcpu_stat_lookup pcpu_stat_group'),
    ('pcpu_charge_init', 'initialise and destroy charge objects',
     'pcpu_charge_init pcpu_charge_destroy'),
    ('pcpu_charge_try', 'charge and uncharge against a limit',
     'pcpu_charge_try pcpu_charge_uncharge'),
    ('pcpu_charge_usage', 'what a charge object holds',
     'pcpu_charge_usage pcpu_charge_reserved pcpu_charge_limit'),
    ('pcpu_shared_create', 'create, open, close and remove shared segments',
     'pcpu_shared_create pcpu_shared_open pcpu_shared_close pcpu_shared_unlink'),
    ('pcpu_shared_read', 'read the items of a shared segment',
     'pcpu_shared_read pcpu_shared_error_bound pcpu_shared_sum '
     'pcpu_shared_sync_if_delta_above pcpu_shared_snapshot pcpu_shared_fold_all'),
    ('pcpu_shared_count', 'the items of a shared segment',
     'pcpu_shared_count pcpu_shared_name pcpu_shared_help pcpu_shared_kind '
     'pcpu_shared_lookup pcpu_shared_lookup_labels pcpu_shared_labels pcpu_shared_bounds'),
    ('pcpu_shared_observe', 'histogram items of a shared segment',
     'pcpu_shared_observe pcpu_shared_histogram'),
    ('pcpu_shared_write', 'expose a shared segment as metrics',
     'pcpu_shared_write pcpu_shared_collector'),
    ('pcpu_counter_register', 'register counters and stat sets as metrics',
     'pcpu_counter_register pcpu_stat_register'),
    ('pcpu_metrics_write', 'write every registered metric',
     'pcpu_metrics_write pcpu_metrics_content_type'),
    ('pcpu_metrics_collector_add', 'samples computed at scrape time',
     'pcpu_metrics_collector_add pcpu_metrics_collector_remove '
     'pcpu_metrics_process_collector'),
    ('pcpu_family_create', 'create and destroy label families',
     'pcpu_family_create pcpu_family_create_summary pcpu_family_create_sparse '
     'pcpu_family_destroy'),
    ('pcpu_family_get', 'the children of a label family',
     'pcpu_family_get pcpu_family_get_histogram pcpu_family_get_summary pcpu_family_remove '
     'pcpu_family_reclaim'),
    ('pcpu_family_curry', 'label families with some label values fixed',
     'pcpu_family_curry pcpu_family_curried_free pcpu_family_curried_get '
     'pcpu_family_curried_get_histogram pcpu_family_curried_get_gauge '
     'pcpu_family_curried_get_summary'),
    ('pcpu_family_count', 'the size of a label family',
     'pcpu_family_count pcpu_family_child_size'),
    ('pcpu_gauge_set', 'set, add to and read set-style gauges',
     'pcpu_gauge_set pcpu_gauge_add pcpu_gauge_get pcpu_gauge_double_set '
     'pcpu_gauge_double_add pcpu_gauge_double_get'),
    ('pcpu_gauge_register', 'expose set-style gauges as metrics',
     'pcpu_gauge_register pcpu_gauge_unregister pcpu_gauge_double_register '
     'pcpu_gauge_double_unregister'),
    ('pcpu_counter_double_init', 'counters and gauges that add doubles, per-CPU',
     'pcpu_counter_double_init pcpu_counter_double_destroy pcpu_counter_double_register'),
    ('pcpu_counter_double_add', 'add to and read a counter or gauge of doubles',
     'pcpu_counter_double_add pcpu_counter_double_sum pcpu_counter_double_refused'),
    ('pcpu_histogram_create', 'create and destroy histograms',
     'pcpu_histogram_create pcpu_histogram_create_sparse pcpu_histogram_destroy'),
    ('pcpu_histogram_observe', 'record into and read histograms',
     'pcpu_histogram_observe pcpu_histogram_observe_double pcpu_histogram_snapshot'),
    ('pcpu_summary_create', 'create and destroy summaries (quantiles)',
     'pcpu_summary_create pcpu_summary_destroy'),
    ('pcpu_summary_observe', 'record into and read summaries',
     'pcpu_summary_observe pcpu_summary_observe_double pcpu_summary_quantile '
     'pcpu_summary_count pcpu_summary_alpha'),
    ('pcpu_metrics_respond', 'the body of a /metrics response',
     'pcpu_metrics_respond pcpu_metrics_response_free pcpu_metrics_negotiate '
     'pcpu_metrics_gzip_accepted'),
    ('pcpu_metrics_serve', 'a small /metrics server',
     'pcpu_metrics_serve pcpu_metrics_server_port pcpu_metrics_server_stop'),
]
ERRNO_NAMES = set(errno.errorcode.values())
WIDTH = 78


class Decl:
    """A documented declaration of a header."""

    def __init__(self, header, doc, code):
        self.header, self.doc, self.code = header, doc, code
        self.kind = self.name = None
        self.ret, self.params = '', []


def comment_body(text):
    """The lines of a /** */ comment, without its frame."""
    text = re.sub(r'^/\*\*<?', '', text.strip())
    text = re.sub(r'\*/$', '', text)
    lines = [re.sub(r'^\s*\* ?', '', l) for l in text.split('\n')]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def matching(text, i, open_c, close_c):
    """Index just past the bracket that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError('unbalanced ' + open_c)


def clean_code(code):
    code = re.sub(r'\b(PCPU_EXPORT|PCPU_INLINE|PCPU_PURE|PCPU_ALWAYS_INLINE|static|inline)\b',
                  ' ', code)
    return ' '.join(code.split())


def split_params(params):
    out, depth, cur = [], 0, ''
    for ch in params:
        if ch == ',' and depth == 0:
            out.append(cur)
            cur = ''
            continue
        depth += ch == '('
        depth -= ch == ')'
        cur += ch
    out.append(cur)
    return [' '.join(p.split()) for p in out if p.strip()]


def parse_function(d):
    """Fills d's name, return type and parameters from its code."""
    code = clean_code(d.code)
    i = code.index('(')
    m = re.search(r'(\w+)\s*$', code[:i])
    d.name = m.group(1)
    d.ret = code[:m.start()].strip()
    end = matching(code, i, '(', ')')
    d.params = []
    for p in split_params(code[i + 1:end - 1]):
        m = re.match(r'^(.*?)(\w+)$', p)
        if '(' in p or p == 'void' or not m or not m.group(1).strip():
            d.params.append((p, None))  # a function pointer, or void
        else:
            d.params.append((m.group(1), m.group(2)))


def parse_header(path):
    """The header's file comment and its documented declarations."""
    src = open(path, encoding='utf-8').read()
    name = os.path.basename(path)
    file_doc, decls = [], []
    # braces outside extern "C", to skip the comments of struct members
    plain = re.sub(r'extern "C" \{|#ifdef __cplusplus\n\}', lambda m: ' ' * len(m.group(0)),
                   src)
    for m in re.finditer(r'/\*\*(?!<).*?\*/', src, re.S):
        if plain.count('{', 0, m.start()) != plain.count('}', 0, m.start()):
            continue
        doc = comment_body(m.group(0))
        if doc and doc[0].startswith('@file'):
            file_doc = doc[1:]
            continue
        rest = src[m.end():]
        body = rest.lstrip()
        d = Decl(name, doc, '')
        if body.startswith('#define'):
            line = re.match(r'#define\s+(\w+)(\(?)', body)
            d.kind, d.name = ('macro' if line.group(2) else 'constant'), line.group(1)
            d.code = re.match(r'(?:[^\n]*\\\n)*[^\n]*', body).group(0)
        elif re.match(r'(struct|enum)\s+\w+\s*\{', body):
            end = matching(body, body.index('{'), '{', '}')
            d.kind = 'type'
            d.name = re.match(r'(?:struct|enum)\s+(\w+)', body).group(1)
            d.code = body[:end] + ';'
        elif re.match(r'(struct|enum)\s+\w+\s*;', body):
            d.kind, d.name = 'type', re.match(r'\w+\s+(\w+)', body).group(1)
            d.code = body[:body.index(';') + 1]
        elif body.startswith('typedef'):
            semi = body.index(';')
            d.kind, d.code = 'typedef', body[:semi + 1]
            d.name = re.search(r'\(\s*\*\s*(\w+)\)|(\w+)\s*;$', d.code).group(1) or \
                re.search(r'(\w+)\s*;$', d.code).group(1)
        else:
            # a declaration: up to its ';' or its body's '{' outside parentheses
            j, depth = 0, 0
            while body[j] not in ';{' or depth:
                depth += body[j] == '('
                depth -= body[j] == ')'
                j += 1
            d.code = body[:j]
            if '(' in d.code:
                d.kind = 'function'
                parse_function(d)
            else:
                d.kind = 'variable'
                d.name = re.search(r'(\w+)\s*$', d.code).group(1)
                d.ret = clean_code(d.code)
        decls.append(d)
    return file_doc, decls


def all_functions(src):
    """Every function a header declares or defines: (name, documented)."""
    out = []
    pat = re.compile(r'^(?:PCPU_EXPORT|PCPU_INLINE|static inline)\b[^;{(]*?(\w+)\s*\(', re.M)
    for m in pat.finditer(src):
        before = src[:m.start()].rstrip()
        out.append((m.group(1), before.endswith('*/') and
                    before[before.rfind('/*'):].startswith('/**')))
    return out


# --- roff ---

def esc(text):
    """Escapes plain text for roff."""
    text = text.replace('\\', '\\e')
    text = re.sub(r'(?<![\w\\])-', r'\\-', text)
    return text


def inline(text):
    """Doxygen inline markup of one line to roff escapes."""
    text = esc(text)
    text = re.sub(r'[@\\]([pca]) (\*?)(\w+)', lambda m: m.group(2) + '\\fI' + m.group(3) +
                  '\\fP', text)
    # \\% keeps a name whole, where it starts a word (elsewhere it would
    # mark a hyphenation point)
    text = re.sub(r'(^|(?<=\s))(_*[a-z][a-z0-9_]*)\(\)', r'\\fB\\%\2\\fP()', text)
    text = re.sub(r'(?<![\w%])(_*[a-z][a-z0-9_]*)\(\)', r'\\fB\1\\fP()', text)
    # a call with arguments may break after its parenthesis
    text = re.sub(r'(\w)\((?=[^)\s])', r'\1(\\:', text)
    return text


def line_out(text):
    text = text.strip()
    if text.startswith(('.', "'")):
        text = '\\&' + text
    return text


def doc_roff(lines):
    """Doxygen comment lines (no @return, @since) to roff paragraphs."""
    out, para, in_code, in_item = [], False, False, False
    for raw in lines:
        if in_code:
            if raw.strip() == '@endcode':
                out.append('.EE')
                in_code = False
            else:
                out.append('\\&' + esc(raw.expandtabs(8)))
            continue
        if raw.strip() == '@code':
            out.append('.PP')
            out.append('.EX')
            in_code, para = True, False
            continue
        if not raw.strip():
            para, in_item = False, False
            continue
        item = re.match(r'^\s*- (.*)', raw)
        if item:
            out.append('.IP \\(bu 2')
            out.append(line_out(inline(item.group(1))))
            para, in_item = True, True
            continue
        if not para:
            out.append('.PP')
            para = True
        elif in_item and not raw.startswith(' '):
            out.append('.PP')
            in_item = False
        out.append(line_out(inline(raw)))
    return out


def split_doc(lines):
    """(description lines, @return text, @since text) of a comment."""
    text = '\n'.join(lines)
    since = ''
    m = re.search(r'@since\s+(.*?)\s*(?=@(?:return|since)\b|$)', text, re.S)
    if m:
        since = ' '.join(m.group(1).split())
        text = text[:m.start()] + text[m.end():]
    ret = ''
    m = re.search(r'@return\s+(.*?)\s*(?=@(?:return|since)\b|$)', text, re.S)
    if m:
        ret = m.group(1)
        text = text[:m.start()] + text[m.end():]
    desc = [l.rstrip() for l in text.split('\n')]
    while desc and not desc[-1].strip():
        desc.pop()
    return desc, ret, since


def brief(desc):
    """The first sentence of a description, for a NAME line."""
    text = ' '.join(' '.join(desc).split())
    m = re.match(r'(.*?[.:;])(\s|$)', text)
    s = (m.group(1) if m else text).rstrip('.:;')
    s = re.sub(r'[@\\][pca] ', '', s)
    return s[:1].lower() + s[1:]


def first_sentence(desc):
    """A description's first sentence, whole: what a function without
    @return says it returns."""
    text = ' '.join(' '.join(desc).split())
    m = re.match(r'(.*?\.)(\s+[A-Z(]|$)', text)
    return m.group(1) if m else text


def proto_roff(d):
    """The SYNOPSIS lines of a function or variable: .BI, names in italics."""
    if d.kind == 'variable':
        return ['.BI "' + esc(re.sub(r'\w+$', '', d.ret)) + '" ' + d.name + ' ;']
    head = d.ret + ('' if d.ret.endswith('*') else ' ') + d.name + '('
    # segments (bold, italic) per parameter, broken onto lines that fit
    lines, cur, width = [], [head], len(head)
    for k, (text, pname) in enumerate(d.params):
        last = k == len(d.params) - 1
        tail = ');' if last else ','
        seg = [text] + ([pname] if pname else []) + [tail]
        plen = len(text) + len(pname or '') + len(tail) + 1
        if width + plen > WIDTH and width > len(head):
            lines.append(cur)
            cur, width = [' ' * len(head)], len(head)
        elif k:
            cur[-1] += ' '
        if pname:
            cur[-1] += text
            cur += [pname, tail]
        else:
            cur[-1] += text + tail
        width += plen
    if not d.params:
        cur[-1] += ');'
    lines.append(cur)
    out = []
    for segs in lines:
        if len(segs) == 1:
            out.append('.B "' + esc(segs[0]) + '"')
        else:
            out.append('.BI ' + ' '.join('"' + esc(s) + '"' for s in segs))
    return out


def errors_of(d):
    """[(code, text)] from the @return text (or the description without one)."""
    desc, ret, _ = split_doc(d.doc)
    text = ' '.join((ret or ' '.join(desc)).split())
    codes = [m for m in re.finditer(r'\b(E[A-Z0-9]+)\b', text) if m.group(1) in ERRNO_NAMES]
    out = []
    for k, m in enumerate(codes):
        end = codes[k + 1].start() if k + 1 < len(codes) else len(text)
        body = text[m.end():end]
        if re.match(r'\s*:', body):
            body = body.split(':', 1)[1]
        else:
            body = re.sub(r'^[\s,;]*(if|for|when)?\s+', '', body)
        body = re.sub(r'[\s,;.]*(or|and)?[\s,;.\-]*$', '', body)
        body = body.strip()
        if body.startswith('('):
            # "ENOTSUP (as for ...), or ...": what the parentheses say
            try:
                body = body[1:matching(body, 0, '(', ')') - 1]
            except ValueError:
                body = body[1:]
        elif body.count('(') > body.count(')'):
            body += ')'
        while body.count(')') > body.count('('):
            body = body.rsplit(')', 1)[0]
        if not body.strip():
            body = os.strerror(getattr(errno, m.group(1)))
        out.append((m.group(1), body.strip()))
    return out


def tp_body(lines):
    """doc_roff() lines as the body of a .TP: paragraphs beyond the first
    inside .RS/.RE, so that they keep the body's indentation."""
    lines = lines[1:] if lines and lines[0] == '.PP' else lines
    if any(l.startswith('.') and not l.startswith('.\\') for l in lines):
        return ['.RS'] + lines + ['.RE']
    return lines


def fn_ref(name):
    return '\\fB\\%' + name + '\\fP()'


def link_line(header):
    pc = 'percpu-metrics' if header in METRICS_HEADERS else 'percpu'
    return ['.PP', 'Compile and link with', '.IR "$(pkg\\-config \\-\\-cflags \\-\\-libs '
            + pc + ')" .']


def th(name, version, title='percpu Library Functions Manual'):
    # left-adjusted: the text is full of long identifiers
    return '.TH %s 3 "" "percpu %s" "%s"\n.ad l' % (name, version, title)


def see_also(names, exclude):
    seen, out = set(), []
    for n, sec in sorted(names, key=lambda x: (x[1], x[0])):
        if (n, sec) in seen or n in exclude:
            continue
        seen.add((n, sec))
        out.append('.BR \\%%%s (%s)' % (esc(n), sec))
    return [l + ',' for l in out[:-1]] + out[-1:]


def referenced(lines, page_of):
    """The pages of the functions a text names."""
    refs = set()
    for l in lines:
        for m in re.finditer(r'\b(_*[a-z][a-z0-9_]*)\(\)', l):
            if m.group(1) in page_of:
                refs.add((page_of[m.group(1)], '3'))
    return refs


def function_page(page, what, members, page_of, version):
    header = members[0].header
    out = [th(page, version), '.SH NAME',
           ', '.join(esc(d.name) for d in members) + ' \\- ' + esc(what),
           '.SH SYNOPSIS', '.nf', '.B #include <percpu/%s>' % header, '.PP']
    for d in members:
        out += proto_roff(d)
    out += ['.fi'] + link_line(header)
    out += ['.SH DESCRIPTION']
    docs = [split_doc(d.doc) for d in members]
    for d, (desc, ret, since) in zip(members, docs):
        if not ' '.join(desc).strip():
            raise SystemExit('%s: %s has no description' % (header, d.name))
        if len(members) > 1:
            out += ['.TP', fn_ref(d.name) if d.kind == 'function' else '.I ' + d.name]
            out += tp_body(doc_roff(desc))
        else:
            out += doc_roff(desc)
    out += ['.SH RETURN VALUE']
    void = [d for d in members if d.kind == 'function' and d.ret == 'void']
    for d, (desc, ret, since) in zip(members, docs):
        if d in void or d.kind != 'function':
            continue
        text = ret.split('\n') if ret else [first_sentence(desc)]
        text[0] = text[0][:1].upper() + text[0][1:]
        body = doc_roff(text)
        if len(members) > 1:
            out += ['.TP', fn_ref(d.name)]
            out += tp_body(body)
        else:
            out += body
    if void:
        out += ['.PP', ', '.join(fn_ref(d.name) for d in void) +
                (' returns' if len(void) == 1 else ' return') + ' no value.']
    out += ['.SH ERRORS']
    errs = [(d, errors_of(d)) for d in members if d.kind == 'function']
    if not any(e for _, e in errs):
        out += ['These functions report no errors.' if len(errs) > 1 else
                'This function reports no errors.']
    order = []
    for _, e in errs:
        for code, _ in e:
            if code not in order:
                order.append(code)
    for code in order:
        out += ['.TP', '.B ' + code]
        lines = []
        for d, e in errs:
            for c, body in e:
                if c == code:
                    lines.append(('(' + fn_ref(d.name) + ') ' if len(errs) > 1 else '') +
                                 inline(body) + '.')
        out += ['.br\n'.join(line_out(l) + '\n' for l in lines).rstrip('\n')]
    out += ['.SH HISTORY']
    by_since = {}
    for d, (desc, ret, since) in zip(members, docs):
        by_since.setdefault(since or '?', []).append(
            fn_ref(d.name) if d.kind == 'function' else '\\fI' + d.name + '\\fP')
    for since, names in by_since.items():
        out += ['.PP', ', '.join(names) + ': percpu ' + esc(since) + '.']
    refs = {(OVERVIEW[header], '3'), ('percpu', '7')}
    for d in members:
        refs |= referenced(d.doc, page_of)
    out += ['.SH SEE ALSO'] + see_also(refs, {page})
    return '\n'.join(out) + '\n'


def code_block(code):
    """Verbatim C in a .EX block, Doxygen member comments made plain."""
    code = re.sub(r'/\*\*<?', '/*', code)
    code = re.sub(r'\bPCPU_GAUGE_ALIGNED\b\s*', '', code)
    out = ['.EX']
    for l in code.split('\n'):
        l = l.rstrip().expandtabs(8)
        l = re.sub(r'^( {8})+', lambda m: '    ' * (len(m.group(0)) // 8), l)
        l = re.sub(r'[@\\][pca] (\w)', r'\1', l)
        out.append('\\&' + esc(l) if l else '')
    return out + ['.EE']


def overview_page(header, file_doc, decls, page_of, version):
    page = OVERVIEW[header]
    desc, _, _ = split_doc(file_doc)
    out = [th(page, version), '.SH NAME', esc(page) + ' \\- ' + esc(brief(desc)),
           '.SH SYNOPSIS', '.nf', '.B #include <percpu/%s>' % header, '.fi']
    # the first paragraph is the NAME line's when it is one sentence
    if desc and desc[0].rstrip().endswith('.') and (len(desc) == 1 or not desc[1].strip()):
        desc = desc[1:]
    out += link_line(header) + ['.SH DESCRIPTION'] + doc_roff(desc)
    types = [d for d in decls if d.kind in ('type', 'typedef')]
    consts = [d for d in decls if d.kind in ('constant', 'macro')]
    funcs = [d for d in decls if d.kind in ('function', 'variable')]
    if types:
        out += ['.SS Types']
        for d in types:
            tdesc, _, since = split_doc(d.doc)
            out += doc_roff(tdesc) + ['.PP'] + code_block(d.code)
    if consts:
        out += ['.SS Constants and macros']
        for d in consts:
            cdesc, _, _ = split_doc(d.doc)
            out += ['.TP', '.B "' + esc(re.match(r'#define\s+(\w+(?:\([^)]*\))?)',
                                                 d.code).group(1)) + '"']
            body = doc_roff(cdesc)
            out += tp_body(body)
    if funcs:
        out += ['.SS Functions']
        for d in funcs:
            fdesc, _, _ = split_doc(d.doc)
            out += ['.TP', fn_ref(d.name) if d.kind == 'function' else '.I ' + d.name,
                    line_out(inline(brief(fdesc)[:1].upper() + brief(fdesc)[1:] + '.')),
                    'See', '.BR %s (3).' % esc(page_of[d.name])]
    refs = {('percpu', '7')} | {(page_of[d.name], '3') for d in funcs}
    refs |= referenced(file_doc, page_of)
    for d in decls:
        refs |= referenced(d.doc, page_of)
    for m in re.finditer(r'<percpu/(\w+\.h)>', '\n'.join(file_doc)):
        if m.group(1) in OVERVIEW:
            refs.add((OVERVIEW[m.group(1)], '3'))
    out += ['.SH SEE ALSO'] + see_also(refs, {page})
    return '\n'.join(out) + '\n'


# The C++ header, header-only: one overview page (pcpu_cxx(3), a name of the
# library's prefix, as the page-name check wants) of its classes and members.
CXX_HEADER, CXX_PAGE = 'metrics.hpp', 'pcpu_cxx'


def cxx_decl(body):
    """A documented C++ declaration: up to its ';' or body's '{' outside
    parentheses, without a constructor's initialiser list."""
    j, depth = 0, 0
    while j < len(body) and (body[j] not in ';{' or depth):
        depth += body[j] == '('
        depth -= body[j] == ')'
        j += 1
    code = ' '.join(clean_code(body[:j]).split())
    # "...) noexcept : member_(x)" ends before its initialiser list
    i = code.find('(')
    if i >= 0:
        end = matching(code, i, '(', ')')
        m = re.match(r'((?:\s*(?:const|noexcept))*)\s*:\s', code[end:])
        if m:
            return code[:end] + m.group(1)
    return code


def cxx_page(path, version):
    """pcpu_cxx(3): the header's comment, then each class of namespace
    percpu (top level, not detail) with its documented members."""
    src = open(path, encoding='utf-8').read()
    file_doc = comment_body(re.search(r'/\*\*.*?\*/', src, re.S).group(0))[1:]
    desc, _, _ = split_doc(file_doc)
    names, sections = [], []
    # top-level comments start a line; a class's members are one tab in
    for m in re.finditer(r'^/\*\*(?!<).*?\*/\n', src, re.M | re.S):
        doc = comment_body(m.group(0))
        if not doc or doc[0].startswith('@file') or '@internal' in ' '.join(doc):
            continue
        rest = src[m.end():]
        # a class template's "template <...>" line comes first
        cls = re.match(r'(template <[^\n]*>\n)?(class|struct) (\w+)', rest)
        out = []
        if cls:
            names.append((cls.group(2), cls.group(3)))
            out += ['.SS "%s%s percpu::%s"' % ((cls.group(1) or '').replace('\n', ' '),
                                              cls.group(2), cls.group(3))]
            out += doc_roff(split_doc(doc)[0])
            end = matching(rest, rest.index('{'), '{', '}')
            body = rest[:end]
            for mm in re.finditer(r'^\t/\*\*(?!<).*?\*/\n\t', body, re.M | re.S):
                mdoc = comment_body(mm.group(0).strip())
                if '@internal' in ' '.join(mdoc):
                    continue
                out += ['.TP', '.B "' + esc(cxx_decl(body[mm.end():])).replace('"', '\\(dq') + '"']
                out += tp_body(doc_roff(split_doc(mdoc)[0]))
        else:
            out += ['.SS "%s"' % esc(cxx_decl(rest)).replace('"', '\\(dq')]
            out += doc_roff(split_doc(doc)[0])
        sections.append(out)
    out = [th(CXX_PAGE, version), '.SH NAME',
           esc(CXX_PAGE) + ' \\- ' + esc('C++17 wrappers of libpercpu-metrics, <percpu/metrics.hpp>'),
           '.SH SYNOPSIS', '.nf', '.B #include <percpu/metrics.hpp>', '.PP']
    # using-declarations, not forward declarations: they compile only if
    # the header has the class (check-man-pages.py compiles this)
    out += ['.BI "using percpu::" %s ;' % name for _, name in names]
    out += ['.fi', '.PP', 'Compile and link, with a C++17 compiler, with',
            '.IR "$(pkg\\-config \\-\\-cflags \\-\\-libs percpu-metrics)" .']
    out += ['.SH DESCRIPTION'] + doc_roff(desc)
    for sec in sections:
        out += sec
    refs = {('percpu', '7')}
    for m in re.finditer(r'<percpu/(\w+\.h)>', src):
        if m.group(1) in OVERVIEW:
            refs.add((OVERVIEW[m.group(1)], '3'))
    out += ['.SH SEE ALSO'] + see_also(refs, {CXX_PAGE})
    return '\n'.join(out) + '\n'


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    inc, outdir = sys.argv[1], sys.argv[2]
    version = sys.argv[3] if len(sys.argv) == 4 else ''
    hdir = os.path.join(inc, 'percpu')
    headers = sorted(h for h in os.listdir(hdir) if h.endswith('.h') and h not in SKIP_HEADERS)
    parsed, by_name = {}, {}
    for h in headers:
        if h not in OVERVIEW:
            sys.exit('%s: a public header without an overview page name (OVERVIEW)' % h)
        src = open(os.path.join(hdir, h), encoding='utf-8').read()
        for name, documented in all_functions(src):
            if not documented and not name.startswith('__'):
                sys.exit('%s: %s() has no /** */ comment' % (h, name))
        parsed[h] = parse_header(os.path.join(hdir, h))
        for d in parsed[h][1]:
            if d.kind in ('function', 'variable'):
                by_name[d.name] = d
    page_of, pages = {}, []
    for page, what, names in GROUPS:
        members = []
        for n in names.split():
            if n not in by_name:
                sys.exit('GROUPS: %s is not a documented function of a public header' % n)
            if n in page_of:
                sys.exit('GROUPS: %s is in two groups' % n)
            members.append(by_name[n])
            page_of[n] = page
        if len({d.header for d in members}) != 1:
            sys.exit('GROUPS: %s spans headers' % page)
        pages.append((page, what, members))
    for n, d in sorted(by_name.items()):
        if n not in page_of:
            pages.append((n, brief(split_doc(d.doc)[0]), [d]))
            page_of[n] = n
    os.makedirs(outdir, exist_ok=True)
    # no page of a function that is gone
    for old in os.listdir(outdir):
        if old.endswith('.3'):
            os.remove(os.path.join(outdir, old))
    written = set()

    def write(name, text):
        if name in written:
            sys.exit('two pages named %s' % name)
        written.add(name)
        with open(os.path.join(outdir, name + '.3'), 'w', encoding='utf-8') as f:
            f.write(text)

    for page, what, members in pages:
        write(page, function_page(page, what, members, page_of, version))
        for d in members:
            if d.name != page:
                write(d.name, '.so man3/%s.3\n' % page)
    if os.path.exists(os.path.join(hdir, CXX_HEADER)):
        write(CXX_PAGE, cxx_page(os.path.join(hdir, CXX_HEADER), version))
    for h in headers:
        write(OVERVIEW[h], overview_page(h, parsed[h][0], parsed[h][1], page_of, version))
        # `man PCPU_COUNTER_DEFINE`: a function-like macro is documented in
        # its header's overview (Constants and macros), which its link opens
        for d in parsed[h][1]:
            if d.kind == 'macro' and not d.name.startswith('__'):
                write(d.name, '.so man3/%s.3\n' % OVERVIEW[h])


if __name__ == '__main__':
    main()
