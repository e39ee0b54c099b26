# SPDX-License-Identifier: MIT
"""Is an exposition valid? Parses a text 0.0.4 file and an OpenMetrics
file with prometheus_client's parsers, and fails on what the lenient text
parser lets through: a family written twice, one series written twice.
usage: check_body.py PROMETHEUS-FILE OPENMETRICS-FILE [EXEMPLARS]; with
EXEMPLARS, the OpenMetrics body must hold that many exemplars. Exit 0
valid, 1 invalid (the reason on stdout), 77 without the module."""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families as prom_parse
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
except ImportError:
    print("prometheus_client is not installed: skipped")
    sys.exit(77)


def check(what, families, exemplars=None):
    names, series = set(), set()
    seen = 0
    for f in families:
        if f.name in names:
            raise ValueError(f"{what}: family {f.name} written twice")
        names.add(f.name)
        for s in f.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in series:
                raise ValueError(f"{what}: series {key} written twice")
            series.add(key)
            seen += s.exemplar is not None
    if exemplars is not None and seen != exemplars:
        raise ValueError(f"{what}: {seen} exemplars, not {exemplars}")
    return len(series)


def main():
    prom = open(sys.argv[1], encoding="utf-8").read()
    om = open(sys.argv[2], encoding="utf-8").read()
    try:
        n = check("text 0.0.4", prom_parse(prom))
        m = check("openmetrics", om_parse(om),
                  int(sys.argv[3]) if len(sys.argv) > 3 else None)
    except Exception as e:  # any parser error: invalid
        print(f"invalid: {e!r}")
        sys.exit(1)
    print(f"valid: {n} series in text, {m} in openmetrics")
    sys.exit(0)


main()
