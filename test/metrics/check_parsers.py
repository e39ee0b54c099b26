# SPDX-License-Identifier: MIT
"""Parses write-metrics' output with prometheus_client's two parsers and
checks what they read against what the program wrote.
usage: check_parsers.py PROMETHEUS-FILE OPENMETRICS-FILE; exit 77 without
the module."""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families as prom_parse
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
except ImportError:
    print("prometheus_client is not installed: skipped")
    sys.exit(77)

WANT = {
    # family: (type, unit, {(sample name, labels...): value})
    "app_started": ("counter", "", {("app_started_total",): 1}),
    "app_received_bytes": ("counter", "bytes", {
        ("app_received_bytes_total", ("interface", "lo")): 4096}),
    "http_requests": ("counter", "", {
        ("http_requests_total", ("method", "GET"), ("path", '/a"b\\c\nd')): 12,
        ("http_requests_total", ("method", "POST"), ("path", "/")): 3}),
    "http_responses": ("counter", "", {
        ("http_responses_total", ("code", "200"), ("path", "/")): 5,
        ("http_responses_total", ("code", "404"), ("path", '/a"b\\c\nd')): 1}),
    "route_latency_seconds": ("histogram", "seconds", {
        ("route_latency_seconds_bucket", ("route", "/a\\"), ("le", "0.1")): 1,
        ("route_latency_seconds_bucket", ("route", "/a\\"), ("le", "1.0")): 2,
        ("route_latency_seconds_bucket", ("route", "/a\\"), ("le", "+Inf")): 3,
        ("route_latency_seconds_sum", ("route", "/a\\")): 5.55,
        ("route_latency_seconds_count", ("route", "/a\\")): 3}),
    "queue_depth": ("gauge", "", {("queue_depth",): 42}),
    "load_ratio": ("gauge", "ratio", {("load_ratio",): 0.25}),
    "request_duration_seconds": ("histogram", "seconds", {
        ("request_duration_seconds_bucket", ("le", "0.001")): 1,
        ("request_duration_seconds_bucket", ("le", "0.01")): 1,
        ("request_duration_seconds_bucket", ("le", "0.25")): 17,
        ("request_duration_seconds_bucket", ("le", "1.0")): 67,
        ("request_duration_seconds_bucket", ("le", "+Inf")): 100,
        ("request_duration_seconds_sum",): 74.25,
        ("request_duration_seconds_count",): 100}),
    "rpc_size_bytes": ("summary", "bytes", {
        ("rpc_size_bytes", ("quantile", "0.5")): 5,
        ("rpc_size_bytes", ("quantile", "0.9")): 9,
        ("rpc_size_bytes", ("quantile", "0.99")): 10,
        ("rpc_size_bytes_sum",): 55,
        ("rpc_size_bytes_count",): 10}),
    "sent_bytes": ("counter", "bytes", {("sent_bytes_total",): 1 << 20}),
    "size_change_bytes": ("histogram", "bytes", {
        ("size_change_bytes_bucket", ("le", "-100.0")): 1,
        ("size_change_bytes_bucket", ("le", "0.0")): 1,
        ("size_change_bytes_bucket", ("le", "4096.0")): 2,
        ("size_change_bytes_bucket", ("le", "+Inf")): 2,
        ("size_change_bytes_sum",): -190,
        ("size_change_bytes_count",): 2}),
    "temperature_celsius": ("gauge", "celsius", {("temperature_celsius",): -7}),
    "vm_nr_free_pages": ("gauge", "", {("vm_nr_free_pages",): 12345}),
    "vm_pgfault": ("counter", "", {("vm_pgfault_total",): 99}),
}
# the info metric: a gauge family "x_info" in text 0.0.4, an info family "x" in OpenMetrics
WANT_PROM = dict(WANT, app_build_info=("gauge", "", {("app_build_info", ("version", "0.3.0")): 1}))
WANT_OM = dict(WANT, app_build=("info", "", {("app_build_info", ("version", "0.3.0")): 1}))
HELP = {"http_requests": 'Requests \\ served\nby "us".'}


def canon_le(labels):
    out = dict(labels)
    if "le" in out and out["le"] != "+Inf":
        out["le"] = repr(float(out["le"]))
    return tuple(sorted(out.items()))


def check(name, families, om):
    failures = 0
    want = WANT_OM if om else WANT_PROM
    got = {f.name: f for f in families}
    if sorted(got) != sorted(want):
        print(f"# {name}: families {sorted(got)}, want {sorted(want)}")
        return 1
    for fam, (typ, unit, samples) in want.items():
        f = got[fam]
        if f.type != typ:
            print(f"# {name}: {fam} type {f.type}, want {typ}")
            failures += 1
        if om and f.unit != unit:
            print(f"# {name}: {fam} unit {f.unit!r}, want {unit!r}")
            failures += 1
        if fam in HELP and f.documentation != HELP[fam]:
            print(f"# {name}: {fam} help {f.documentation!r}")
            failures += 1
        seen = {(s.name, canon_le(s.labels)): s.value for s in f.samples}
        for key, value in samples.items():
            k = (key[0], canon_le(key[1:]))
            if om and fam == "size_change_bytes" and key[0] != "size_change_bytes_bucket":
                if k in seen:
                    print(f"# {name}: {k} present with negative buckets")
                    failures += 1
                continue
            if k not in seen or abs(seen[k] - value) > 1e-9:
                print(f"# {name}: {k} = {seen.get(k)}, want {value}")
                failures += 1
    return failures


def check_created(name, text, start, end):
    """The same samples, and a _created one in [start, end] beside every
    counter, histogram and summary series (since 0.5)."""
    failures = check(name, om_parse(text), True)
    families = list(om_parse(text))
    for f in families:
        if f.type not in ("counter", "histogram", "summary"):
            if any(s.name.endswith("_created") for s in f.samples):
                print(f"# {name}: {f.name}, a {f.type}, has _created")
                failures += 1
            continue
        series = {tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("le", "quantile")))
                  for s in f.samples if not s.name.endswith("_created")}
        created = {tuple(sorted(s.labels.items())): s.value
                   for s in f.samples if s.name == f.name + "_created"}
        if set(created) != series:
            print(f"# {name}: {f.name} created for {sorted(created)}, series {sorted(series)}")
            failures += 1
        for labels, value in created.items():
            if not start <= value <= end:
                print(f"# {name}: {f.name}{labels} created {value}, not in [{start}, {end}]")
                failures += 1
    return failures


def main():
    prom = open(sys.argv[1], encoding="utf-8").read()
    om = open(sys.argv[2], encoding="utf-8").read()
    tests = [("prometheus text 0.0.4", lambda: check("prometheus", prom_parse(prom), False)),
             ("openmetrics 1.0.0", lambda: check("openmetrics", om_parse(om), True))]
    if len(sys.argv) > 3:
        om_created = open(sys.argv[3], encoding="utf-8").read()
        start, end = float(sys.argv[4]), float(sys.argv[5])
        tests.append(("openmetrics 1.0.0 with _created",
                      lambda: check_created("openmetrics-created", om_created, start, end)))
    print(f"1..{len(tests)}")
    failed = 0
    for i, (what, run) in enumerate(tests, 1):
        try:
            bad = run()
        except Exception as e:  # a parser error is a failure of the test
            print(f"# {what}: parser raised {e!r}")
            bad = 1
        print(("ok" if bad == 0 else "not ok") + f" {i} - prometheus_client parses {what}")
        failed += bad != 0
    sys.exit(1 if failed else 0)


main()
