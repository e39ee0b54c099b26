#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Words from the glossary only (lib/base/fold.h): the retired synonyms.

Greps lib/, metrics/ and include/ (.c and .h files, code and comments) for
the words that the glossary retired:

  thresh    for threshold ("thresh" not followed by "old", in any case,
            inside identifiers too: thresh_max, PCPU_STAT_MAX_THRESH)
  span      for the threshold's window (a whole word)
  limit     for the threshold ("limit"/"limits" as a word or an
            identifier's part: add_limit; not "limited")
  folded    for the mark (the field or noun: ->folded, .folded, @c folded,
            int64_t folded, `folded`, or folded before ; , ) } = "is" "says";
            not the verb's participle: "is folded,", "half folded)")
  count     for the central value (a member ->count or .count, or a
            declaration int64_t count; not pcpu_stat_count() and the like)

An occurrence is allowed where ALLOWLIST lists its file and word: the
kernel API's own names, real limits (charges, limited_add), identifiers of
another meaning, and today's remaining occurrences. The check fails on an
occurrence not in the list and on a list entry that no longer occurs, so
the list stays exact.

usage: check-glossary.py SOURCE-ROOT [ALLOWLIST]   Prints a TAP report.
       check-glossary.py --list SOURCE-ROOT        Prints the entries the tree
                                                   needs now (to shrink the list).
"""
import os
import re
import sys

WORDS = {
    'thresh': re.compile(r'thresh(?!old)', re.I),
    'span': re.compile(r'\bspan\b'),
    'limit': re.compile(r'(?<![A-Za-z])limits?(?![A-Za-z]|\.h>)', re.I),
    'folded': re.compile(r'(?:->|\.|@c\s+|`)folded\b|\bint64_t\s+folded\b|'
                         r'(?<!is )(?<!are )(?<!be )(?<!been )(?<!was )(?<!not )(?<!half )'
                         r'\bfolded(?=\s*[;,)}=]|\s+(?:is|says)\b)'),
    'count': re.compile(r'(?:->|\.)count\b|\bint64_t\s+count\b'),
}
DIRS = ('lib', 'metrics', 'include')
SAMPLES = (
    ('thresh', True, 'int64_t thresh;'), ('thresh', True, 'PCPU_STAT_MAX_THRESH'),
    ('thresh', True, 'uint64_t new_thresh_max'), ('thresh', False, 'the threshold'),
    ('span', True, '[span] "r"(2 * x)'), ('span', False, 'a group spans lines'),
    ('limit', True, '__pcpu_counter_add_limit(c)'), ('limit', True, 'uint32_t limit;'),
    ('limit', False, 'pcpu_counter_limited_add(c)'), ('limit', False, 'unlimited'),
    ('limit', False, '#include <limits.h>'),
    ('folded', True, 'slot->folded'), ('folded', True, '{value, folded}'),
    ('folded', True, '@c folded says'), ('folded', False, 'the delta is folded in the visit'),
    ('folded', True, 'advances folded, then'), ('folded', False, 'and that pair is folded, under'),
    ('count', True, '&c->count'), ('count', True, 'int64_t count = 0;'),
    ('count', False, 'pcpu_stat_count(s)'), ('count', False, 'unsigned int count;'),
)


def occurrences(root):
    """{(file, word): [line numbers]} over the tree."""
    found = {}
    for d in DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, d)):
            dirnames.sort()
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8') as fh:
                    for n, line in enumerate(fh, 1):
                        for word, pat in WORDS.items():
                            if pat.search(line):
                                found.setdefault((rel, word), []).append(n)
    return found


def read_allowlist(path):
    """{(file, word): line of the list}; malformed lines are errors."""
    allowed, errors = {}, []
    with open(path, encoding='utf-8') as fh:
        for n, line in enumerate(fh, 1):
            text = line.split('#', 1)[0].split()
            if not text:
                continue
            if len(text) != 2 or text[1] not in WORDS:
                errors.append('%s:%d: want "FILE WORD", WORD one of %s' %
                              (path, n, ', '.join(WORDS)))
            elif (text[0], text[1]) in allowed:
                errors.append('%s:%d: %s %s listed twice' % (path, n, text[0], text[1]))
            else:
                allowed[(text[0], text[1])] = n
    return allowed, errors


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--list':
        last = None
        for (f, w) in sorted(occurrences(sys.argv[2])):
            if f != last:
                print('\n# %s' % f)
                last = f
            print('%s %s' % (f, w))
        return 0
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    root = sys.argv[1]
    allow = sys.argv[2] if len(sys.argv) == 3 else \
        os.path.join(root, 'test', 'abi', 'glossary-allow.txt')
    found = occurrences(root)
    allowed, errors = read_allowlist(allow)
    new = sorted(k for k in found if k not in allowed)
    stale = sorted(k for k in allowed if k not in found)
    print('TAP version 13')
    print('1..4')
    ok = True
    for i, (name, bad) in enumerate((
            ('the allowlist is well formed', errors),
            ('no retired synonym outside the allowlist',
             ['%s:%s: "%s" (a retired synonym: use the glossary\'s word, '
              'lib/base/fold.h)' % (f, ','.join(map(str, found[(f, w)])), w)
              for f, w in new]),
            ('every allowlist entry still occurs (the list only shrinks)',
             ['%s: %s %s no longer occurs: remove the entry' % (allow, f, w)
              for f, w in stale])), 1):
        print(('ok' if not bad else 'not ok') + ' %d - %s' % (i, name))
        for b in bad:
            print('# ' + b)
        ok = ok and not bad
    # each pattern on lines that it must and must not match (a broken
    # pattern would pass every tree)
    wrong = ['%s %s "%s"' % (w, 'misses' if want else 'matches', line)
             for w, want, line in SAMPLES if bool(WORDS[w].search(line)) != want]
    print(('ok' if not wrong else 'not ok') + ' 4 - the patterns match what they should')
    for b in wrong:
        print('# ' + b)
    return 0 if ok and not wrong else 1


if __name__ == '__main__':
    sys.exit(main())
