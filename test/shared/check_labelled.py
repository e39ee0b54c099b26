# SPDX-License-Identifier: MIT
# Parses a segment's exposition in both formats with prometheus_client and
# compares every sample with the expected ones.
# usage: check_labelled.py PROM.TXT OM.TXT EXPECTED
# EXPECTED: per line "SAMPLE VALUE [LABEL HEX-VALUE]..." (le as a number).
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as prom


def key(name, labels):
    out = []
    for k, v in labels.items():
        out.append((k, str(float(v)) if k == "le" else v))
    return (name, tuple(sorted(out)))


want = {}
for line in open(sys.argv[3], encoding="utf-8"):
    f = line.split()
    labels = {f[i]: bytes.fromhex(f[i + 1]).decode("utf-8") for i in range(2, len(f), 2)}
    want[key(f[0], labels)] = float(f[1])

for fmt, parse, path in (("text 0.0.4", prom, sys.argv[1]), ("OpenMetrics", om, sys.argv[2])):
    got = {}
    families = {}
    for fam in parse(open(path, encoding="utf-8").read()):
        families[fam.name] = families.get(fam.name, 0) + 1
        for s in fam.samples:
            got[key(s.name, s.labels)] = float(s.value)
    if got != want:
        print(fmt, "differs:")
        for k in sorted(set(got) | set(want)):
            if got.get(k) != want.get(k):
                print("  ", k, "got", got.get(k), "want", want.get(k))
        sys.exit(1)
    if any(n != 1 for n in families.values()):
        print(fmt, "a family in pieces:", families)
        sys.exit(1)
    print(fmt + ":", len(got), "samples parse, values exact,", len(families), "families")
