#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks, as TAP, that the Markdown file DOC quotes each FILE whole, as
one fenced code block, so that the program the docs show is the one the
suite builds and runs."""
import re
import sys

doc, files = sys.argv[1], sys.argv[2:]
blocks = re.findall(r'^```[a-z+]*\n(.*?)^```$', open(doc).read(), re.M | re.S)
print('TAP version 13')
print('1..%d' % len(files))
failed = 0
for i, path in enumerate(files, 1):
    ok = open(path).read() in blocks
    failed += not ok
    print('%s %d - %s quotes %s whole' % ('ok' if ok else 'not ok', i, doc, path))
sys.exit(1 if failed else 0)
