#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# daemon-test.sh [--prometheus] DAEMON N
#
# Makes a throwaway self-signed certificate (CN and DNS SAN localhost, IP
# SAN 127.0.0.1) and key with the openssl CLI, and a password file; starts
# percpu-daemon (DAEMON) with 4 workers and N requests, serving HTTPS at
# /private/metrics behind basic auth on 127.0.0.1 with a free port; waits
# for the tallies it prints (its own exact counts), then scrapes it with
# python3's urllib (the generated certificate as the only CA, the host name
# checked) and checks, exactly:
#   every daemon_requests_total series is a tally, and every tally a
#   series, each carrying the constant label service="percpu-daemon";
#   every bucket of daemon_request_duration_seconds per route, its _sum to
#   the decimal (ns exposed as s), _count == the route's requests, buckets
#   cumulative with +Inf == _count;
#   daemon_busy_seconds_total per worker to the decimal (a scaled counter);
#   daemon_queue_depth per worker (set-style gauges);
#   daemon_workers_done (a collector's) == 4, and the process_* metrics;
#   the summary daemon_response_size_bytes: _count and _sum exact, each
#   quantile within the summary's alpha of the exact one (the observation
#   of that rank, which the daemon prints with the alpha);
#   the same counts in OpenMetrics, which ends with # EOF;
#   no credentials or a wrong password: 401 with a Basic challenge;
#   another path with credentials: 404; plain HTTP: no exposition.
# With --prometheus it then starts a real Prometheus scraping the daemon
# every second over HTTPS (scheme, metrics_path, basic_auth with a
# password_file, tls_config with the certificate as ca_file and server_name
# localhost), waits (at most 60 s) until its query API returns N for the sum
# of daemon_requests_total, and checks up == 1 and that it stored exactly
# the tallies: every requests series, the sums by route, the scaled
# counter, the set gauges and the collector's gauge. Prometheus runs with
# --enable-feature=native-histograms, so it negotiates the protobuf format
# and stores the latency histogram as a native one: histogram_count() and
# histogram_sum() per route are checked exactly, histogram_quantile() of
# the 50th, 90th and 99th percentiles within a native bucket's width
# (2^(1/8) - 1, schema 3) of the exact ones the daemon printed. With
# --enable-feature=exemplar-storage too, the histogram's exemplars (one
# request in 100 is observed with its trace_id) are queried back through
# /api/v1/query_exemplars, each one the daemon recorded with its value;
# OpenMetrics scrapes show them on the classic buckets. The summary is
# stored too: its quantile series within alpha, _sum and _count exact.
#
# A pushed group, with --prometheus: a real Pushgateway
# (prometheus-pushgateway, started here first on another free loopback
# port) to which the daemon pushes every metric once its workers are done
# (-g, pcpu_metrics_push() PUT, job percpu-daemon-push, grouping labels
# instance and path, the path's '/' sent in base64). Prometheus scrapes
# the gateway too (honor_labels: true) and must store each pushed series
# with exactly the tally's labels plus job, instance and path: the
# requests, the classic histogram (text has no native buckets) and the
# summary's _sum and _count. At SIGTERM the daemon deletes the group
# (DELETE), which must then be gone from the gateway's /metrics.
#
# Skipped (exit 77) without openssl or python3; with --prometheus, it fails
# without prometheus or prometheus-pushgateway. Whatever happens, everything
# it started is killed and waited for. Prints one "ok"/"not ok" line per
# check and "daemon-test: N passed, N failed"; exit status 0 when every
# check passed.
set -euo pipefail

PROMETHEUS=0
if [ "${1:-}" = --prometheus ]; then
	PROMETHEUS=1
	shift
fi
if [ $# -ne 2 ]; then
	echo "usage: daemon-test.sh [--prometheus] DAEMON N" >&2
	exit 2
fi
DAEMON=$1 N=$2
PY=${PYTHON:-python3}
WORKERS=4
METRICS_PATH=/private/metrics
USER_NAME=prometheus
for tool in openssl "$PY"; do
	if ! command -v "$tool" >/dev/null; then
		echo "1..0 # SKIP daemon-test.sh: no $tool"
		exit 77
	fi
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/percpu-daemon-test.XXXXXX")
DAEMON_PID= PROM_PID= GW_PID=
TEST_NAME=daemon-test CLEANUP_PIDS="PROM_PID DAEMON_PID GW_PID"
PUSH_JOB=percpu-daemon-push PUSH_INSTANCE=percpu-daemon-test
# loopback servers only: a proxy of the environment (libcurl's push, python's
# urllib) must not get their requests
export no_proxy="127.0.0.1${no_proxy:+,$no_proxy}" NO_PROXY="127.0.0.1${NO_PROXY:+,$NO_PROXY}"
. "$(dirname "$0")/test-helpers.sh"

# pychecks WHAT SCRIPT [ARGS...]: runs the python checks in SCRIPT (a file),
# which print their own "ok"/"not ok" lines; counts them, and a crash as a
# failure of WHAT
pychecks()
{
	local what=$1 out=$TMP/pychecks.out rc=0

	shift
	"$PY" "$@" >"$out" 2>&1 || rc=$?
	cat "$out"
	PASSED=$((PASSED + $(grep -c '^ok ' "$out" || true)))
	FAILED=$((FAILED + $(grep -c '^not ok ' "$out" || true)))
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok ' "$out"; then
		echo "not ok - $what: the checker failed (status $rc)"
		FAILED=$((FAILED + 1))
	fi
}

# ---- certificate, key, password ----

if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 2 -subj /CN=localhost \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$TMP/openssl.log" 2>&1; then
	echo "not ok - openssl: make a self-signed certificate"
	sed 's/^/# /' "$TMP/openssl.log"
	FAILED=$((FAILED + 1))
	finish
fi
printf 'pw-%s-%s\n' "$$" "$RANDOM" >"$TMP/password"

# ---- the Pushgateway (--prometheus) ----

# up when it accepts a connection; another port if this one was taken
PUSH_ARGS=()
if [ "$PROMETHEUS" = 1 ]; then
	GW=$(command -v prometheus-pushgateway || command -v pushgateway || true)
	for try in 1 2 3; do
		[ -n "$GW" ] || break
		GPORT=$(free_port)
		"$GW" --web.listen-address="127.0.0.1:$GPORT" --persistence.file= --log.level=warn \
			>"$TMP/gateway.log" 2>&1 &
		GW_PID=$!
		for i in $(seq 100); do
			kill -0 "$GW_PID" 2>/dev/null || break
			(exec 3<>"/dev/tcp/127.0.0.1/$GPORT") 2>/dev/null && break 2
			sleep 0.1
		done
		stop "$GW_PID" >/dev/null 2>&1 || true
		GW_PID=
	done
	if [ -z "$GW_PID" ]; then
		echo "not ok - prometheus-pushgateway: installed and started on a loopback port"
		[ -f "$TMP/gateway.log" ] && sed 's/^/# /' "$TMP/gateway.log" | tail -n 5
		FAILED=$((FAILED + 1))
		finish
	fi
	echo "# $("$GW" --version 2>&1 | head -n 1) on 127.0.0.1:$GPORT (pid $GW_PID)"
	PUSH_ARGS=(-g "http://127.0.0.1:$GPORT" -J "$PUSH_JOB" -G "instance=$PUSH_INSTANCE"
		-G "path=$METRICS_PATH")
fi

# ---- the daemon ----

# the background job opens its output file when it gets to run: make the
# file first, or the sed below can look for it before it exists
: >"$TMP/daemon.out"
"$DAEMON" -w "$WORKERS" -n "$N" -s 42 -a 127.0.0.1 -p 0 -m "$METRICS_PATH" \
	-c "$TMP/cert.pem" -k "$TMP/key.pem" -u "$USER_NAME" -P "$TMP/password" \
	${PUSH_ARGS[@]+"${PUSH_ARGS[@]}"} >>"$TMP/daemon.out" 2>&1 &
DAEMON_PID=$!
PORT=
for i in $(seq 600); do
	PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$TMP/daemon.out")
	[ -n "$PORT" ] && grep -q '^tallies done$' "$TMP/daemon.out" && break
	kill -0 "$DAEMON_PID" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$PORT" ] || ! grep -q '^tallies done$' "$TMP/daemon.out"; then
	echo "not ok - percpu-daemon did not print its port and tallies within 60 s:"
	sed 's/^/# /' "$TMP/daemon.out" | tail -n 20
	FAILED=$((FAILED + 1))
	finish
fi
sed -n 's/^tally //p' "$TMP/daemon.out" >"$TMP/tallies"
sed -n 's/^quantile //p' "$TMP/daemon.out" >"$TMP/quantiles"
sed -n 's/^exemplar //p' "$TMP/daemon.out" >"$TMP/exemplars"
sed -n 's/^size-quantile //p' "$TMP/daemon.out" >"$TMP/size-quantiles"
sed -n 's/^size-alpha //p' "$TMP/daemon.out" >"$TMP/size-alpha"
echo "# percpu-daemon on https://127.0.0.1:$PORT$METRICS_PATH (pid $DAEMON_PID)," \
	"$(wc -l <"$TMP/tallies") tallies"

# what both checkers share: the exposition's and the tallies' parsers
cat >"$TMP/common.py" <<'EOF'
import decimal, re

LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

def labels(text):
    # le normalised to a float, as "0.0001" and "0.00010000000000000000" are one bound
    return frozenset((k, repr(float(v)) if k == "le" else v) for k, v in LABEL.findall(text or ""))

def series(line):
    m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$', line)
    return (m.group(1), labels(m.group(2)))

def parse_body(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        # an OpenMetrics exemplar (" # {labels} value ts") is not the sample's
        s, v = line.split(" # ", 1)[0].rsplit(" ", 1)
        out[series(s)] = v
    return out

EXEMPLAR = re.compile(r'^(\S+) \S+ # \{trace_id="([0-9]+)"\} (\S+) \S+$')

def parse_exemplars(path):
    # "TRACE_ID NS": the daemon's observations with an exemplar
    return {t: int(ns) for t, ns in (line.split() for line in open(path))}

def parse_tallies(path):
    # "SERIES VALUE SCALE": exposed as VALUE / SCALE exactly
    out = {}
    for line in open(path):
        s, v, scale = line.rsplit(" ", 2)
        out[series(s)] = (int(v), int(scale))
    return out

def exact(text, value, scale):
    # the exposed decimal is value / scale to the last digit
    return decimal.Decimal(text) == decimal.Decimal(value) / decimal.Decimal(scale)

S = "daemon_response_size_bytes"

def summary_wrong(got, tmp):
    # got: {quantile string: value}; each within the summary's alpha of the
    # exact quantile (the observation of that rank) that the daemon printed
    alpha = float(open(tmp + "/size-alpha").read())
    want = {float(q): x for q, x in (line.split() for line in open(tmp + "/size-quantiles"))}
    got = {float(q): v for q, v in got.items()}  # "0.5" and "0.50" are one quantile
    wrong = [(q, got.get(q), x) for q, x in want.items()
             if q not in got or not abs(float(got[q]) - int(x)) <= alpha * int(x) * (1 + 1e-12)]
    wrong += [(q, "not asked") for q in got if q not in want]
    return alpha, want, wrong

def report(ok, what, detail=""):
    print(("ok - " if ok else "not ok - ") + what)
    if not ok and detail:
        print("# " + str(detail)[:2000])
EOF

# ---- scrapes over HTTPS ----

cat >"$TMP/scrape.py" <<'EOF'
import base64, ssl, sys, urllib.error, urllib.request
sys.path.insert(0, sys.argv[1])
from common import *

tmp, port, path, user, workers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
password = open(tmp + "/password").read().strip()
ctx = ssl.create_default_context(cafile=tmp + "/cert.pem")  # host name checked too
url = f"https://127.0.0.1:{port}"
good = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
bad = "Basic " + base64.b64encode(f"{user}:{password}x".encode()).decode()

def get(u, auth=None, accept="text/plain"):
    headers = {"Accept": accept}
    if auth:
        headers["Authorization"] = auth
    try:
        with urllib.request.urlopen(urllib.request.Request(u, headers=headers),
                                    timeout=10, context=ctx) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode(errors="replace")

tallies = parse_tallies(tmp + "/tallies")
status, headers, text = get(url + path, good)
report(status == 200 and headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
       f"HTTPS {path} with credentials: 200, text format, certificate verified for 127.0.0.1",
       (status, headers.get("Content-Type")))
body = parse_body(text)

def family(d, *names):
    return {k: v for k, v in d.items() if k[0] in names}

def compare(what, names):
    want = family(tallies, *names)
    got = family(body, *names)
    wrong = [(k, got.get(k), v) for k, v in want.items()
             if k not in got or not exact(got[k], *v)]
    extra = [k for k in got if k not in want]
    report(want and not wrong and not extra, what, (wrong[:5], extra[:5]))

compare("daemon_requests_total: every series exactly a tally, and no other",
        ["daemon_requests_total"])
reqs = family(body, "daemon_requests_total")
report(reqs and all(("service", "percpu-daemon") in k[1] for k in reqs),
       'daemon_requests_total: the constant label service="percpu-daemon" on every series')
H = "daemon_request_duration_seconds"
compare("histogram: every bucket, _sum (to the decimal) and _count per route exact",
        [H + "_bucket", H + "_count", H + "_sum"])
ok, detail = True, []
for (name, ls), v in family(body, H + "_count").items():
    route = dict(ls)["route"]
    buckets = sorted((float(dict(k[1])["le"]), int(c)) for k, c in body.items()
                     if k[0] == H + "_bucket" and dict(k[1])["route"] == route)
    counts = [c for _, c in buckets]
    by_route = sum(int(c) for k, c in reqs.items() if dict(k[1])["route"] == route)
    if counts != sorted(counts) or buckets[-1] != (float("inf"), int(v)) or by_route != int(v):
        ok = False
        detail.append((route, buckets[-1], v, by_route))
report(ok and len(family(body, H + "_count")) > 0,
       "histogram: buckets cumulative, +Inf == _count == the route's requests_total", detail)
compare("daemon_busy_seconds_total: every worker's, ns exposed as s to the decimal",
        ["daemon_busy_seconds_total"])
report(len(family(body, "daemon_busy_seconds_total")) == workers,
       f"daemon_busy_seconds_total: one series per worker ({workers})")
compare("daemon_queue_depth: every worker's set gauge exact", ["daemon_queue_depth"])
compare(f"daemon_workers_done (a collector's gauge) is {workers}", ["daemon_workers_done"])
compare("summary: daemon_response_size_bytes_count and _sum exact",
        [S + "_count", S + "_sum"])
alpha, want, wrong = summary_wrong({dict(k[1])["quantile"]: v for k, v in body.items()
                                    if k[0] == S}, tmp)
report(want and not wrong, "summary: %d quantiles each within alpha %.3g %% of the exact one"
       % (len(want), 100 * alpha), wrong)
report(all(any(k[0] == n for k in body) for n in
           ("process_cpu_seconds_total", "process_open_fds", "process_resident_memory_bytes")),
       "process collector: process_cpu_seconds_total, _open_fds, _resident_memory_bytes")

status, headers, text = get(url + path, good, "application/openmetrics-text; version=1.0.0")
om = parse_body(text)
report(status == 200 and text.endswith("# EOF\n") and
       family(om, "daemon_requests_total") == reqs,
       "OpenMetrics: the same requests_total series, ending with # EOF")
# the histogram's exemplars: on classic buckets, each one the daemon recorded
recorded = parse_exemplars(tmp + "/exemplars")
shown = [m.groups() for m in map(EXEMPLAR.match, text.splitlines()) if m]
wrong = [e for e in shown if not e[0].startswith(H + "_bucket{") or e[1] not in recorded
         or float(e[2]) != recorded[e[1]] / 1e9]
report(recorded and shown and not wrong,
       "OpenMetrics: %d exemplars on the histogram's buckets, each a recorded trace and value"
       % len(shown), wrong[:5])

status, headers, _ = get(url + path)
report(status == 401 and headers.get("WWW-Authenticate", "").startswith("Basic"),
       "no credentials: 401 with a Basic challenge", (status, dict(headers)))
status, _, _ = get(url + path, bad)
report(status == 401, "a wrong password: 401", status)
status, _, _ = get(url + "/metrics", good)
report(status == 404, "another path (/metrics) with credentials: 404", status)
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        plain = (r.status, r.read()[:200])
except Exception as e:  # a TLS server does not speak HTTP
    plain = ("refused", type(e).__name__)
report(plain[0] != 200 or b"daemon_requests" not in plain[1],
       "plain HTTP: no exposition", plain)
EOF
pychecks "scrapes" "$TMP/scrape.py" "$TMP" "$PORT" "$METRICS_PATH" "$USER_NAME" "$WORKERS"

# ---- Prometheus ----

if [ "$PROMETHEUS" = 1 ]; then
	PPORT=$(free_port)
	mkdir "$TMP/tsdb"
	cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: percpu-daemon
    scheme: https
    metrics_path: $METRICS_PATH
    basic_auth:
      username: $USER_NAME
      password_file: $TMP/password
    tls_config:
      ca_file: $TMP/cert.pem
      server_name: localhost
    static_configs:
      - targets: ['127.0.0.1:$PORT']
  # the pushed group: its own job and grouping labels, not the gateway's
  - job_name: pushgateway
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:$GPORT']
EOF
	prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" --enable-feature=native-histograms,exemplar-storage \
		>"$TMP/prometheus.log" 2>&1 &
	PROM_PID=$!
	echo "# prometheus on 127.0.0.1:$PPORT (pid $PROM_PID), scraping https://127.0.0.1:$PORT$METRICS_PATH"
	GOT=none
	for i in $(seq 60); do
		kill -0 "$PROM_PID" 2>/dev/null || break
		GOT=$(pquery 'sum(daemon_requests_total{job="percpu-daemon"})')
		[ "$GOT" = "$N" ] && break
		sleep 1
	done
	echo "# prometheus: sum(daemon_requests_total) returned $GOT (after about $i s)"
	PUSHED=none
	for i in $(seq 30); do
		kill -0 "$PROM_PID" 2>/dev/null || break
		PUSHED=$(pquery "sum(daemon_requests_total{job=\"$PUSH_JOB\"})")
		[ "$PUSHED" = "$N" ] && break
		sleep 1
	done
	echo "# prometheus: the pushed group's sum(daemon_requests_total) returned $PUSHED (after about $i s more)"
	if [ "$GOT" != "$N" ]; then
		echo "# up: $(pquery 'up{job="percpu-daemon"}')"
		sed 's/^/# /' "$TMP/prometheus.log" | tail -n 20
	fi
	check "prometheus: sum(daemon_requests_total) is exactly $N" [ "$GOT" = "$N" ]
	check "prometheus: the pushed group's sum(daemon_requests_total) is exactly $N" \
		[ "$PUSHED" = "$N" ]
	cat >"$TMP/prom.py" <<'EOF'
import json, sys, urllib.parse, urllib.request
sys.path.insert(0, sys.argv[1])
from common import *

tmp, api, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
push_job, push_instance, push_path = sys.argv[4], sys.argv[5], sys.argv[6]
tallies = parse_tallies(tmp + "/tallies")

def query(expr, drop=("__name__", "job", "instance")):
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(api + "?" + q, timeout=5) as r:
        res = json.load(r)["data"]["result"]
    # job and instance are Prometheus's; the rest is the daemon's
    return {(s["metric"].get("__name__", ""),
             frozenset((k, repr(float(v)) if k == "le" else v) for k, v in s["metric"].items()
                       if k not in drop)): s["value"][1]
            for s in res}

def stored(what, name):
    want = {k: v for k, v in tallies.items() if k[0] == name}
    got = query(name + '{job="percpu-daemon"}')
    # Prometheus stores float64: equal to the double nearest to value / scale
    wrong = [(k, got.get(k), v) for k, v in want.items()
             if k not in got or float(got[k]) != v[0] / v[1]]
    extra = [k for k in got if k not in want]
    report(want and not wrong and not extra, what, (wrong[:5], extra[:5]))

up = query('up{job="percpu-daemon"}')
report(list(up.values()) == ["1"], "prometheus: up == 1 (HTTPS, basic auth, path)", up)
stored("prometheus: every daemon_requests_total series exactly the tally",
       "daemon_requests_total")
by_route = {}
for (name, ls), (v, _) in tallies.items():
    if name == "daemon_requests_total":
        by_route[dict(ls)["route"]] = by_route.get(dict(ls)["route"], 0) + v
got = {dict(k[1])["route"]: int(v) for k, v in
       query('sum by (route) (daemon_requests_total{job="percpu-daemon"})').items()}
report(got == by_route, "prometheus: sum by (route) (daemon_requests_total) exact", (got, by_route))
# the histogram came as a native one (protobuf): no classic series stored
hist = 'daemon_request_duration_seconds{job="percpu-daemon"}'
classic = query('daemon_request_duration_seconds_bucket{job="percpu-daemon"}')
report(not classic, "prometheus: the histogram stored as native, not as classic buckets",
       list(classic)[:3])
def per_route(name):
    return {dict(k[1])["route"]: v for k, v in tallies.items() if k[0] == name}
def by_route_of(expr):
    return {dict(k[1])["route"]: float(v) for k, v in query(expr).items()}
want = {r: float(v) for r, (v, _) in per_route("daemon_request_duration_seconds_count").items()}
got = by_route_of("histogram_count(%s)" % hist)
report(want and got == want, "prometheus: histogram_count() per route exact", (got, want))
want = {r: v / s for r, (v, s) in per_route("daemon_request_duration_seconds_sum").items()}
got = by_route_of("histogram_sum(%s)" % hist)
report(want and got == want, "prometheus: histogram_sum() per route exact (ns as s)", (got, want))
# histogram_quantile() over the native buckets: within a bucket's width
# (schema 3: 2^(1/8) - 1) of the exact quantile the daemon computed
width = 2 ** (1 / 8) - 1
wrong, n, worst = [], 0, 0.0
for line in open(tmp + "/quantiles"):
    route, q, ns = line.split()
    exact = int(ns) / 1e9
    est = by_route_of("histogram_quantile(%s, %s)" % (q, hist)).get(route)
    n += 1
    if est is None or abs(est - exact) > width * exact:
        wrong.append((route, q, exact, est))
    else:
        worst = max(worst, abs(est - exact) / exact)
print("# histogram_quantile(): largest relative error %.2f %%" % (100 * worst))
report(n > 0 and not wrong,
       "prometheus: histogram_quantile() of %d quantiles within %.2f %% of the exact ones"
       % (n, 100 * width), wrong)
stored("prometheus: daemon_busy_seconds_total per worker (ns as s)",
       "daemon_busy_seconds_total")
stored("prometheus: daemon_queue_depth per worker (set gauges)", "daemon_queue_depth")
stored("prometheus: daemon_workers_done (collector)", "daemon_workers_done")
# the native histogram's exemplars, which Prometheus 2.4x reads from the
# classic buckets of the protobuf format only: stored, each a recorded one
recorded = parse_exemplars(tmp + "/exemplars")
q = urllib.parse.urlencode({"query": hist, "start": "0", "end": "4102444800"})
with urllib.request.urlopen(api + "_exemplars?" + q, timeout=5) as r:
    series_ex = json.load(r)["data"]
got = [(e["labels"].get("trace_id"), e["value"]) for s in series_ex for e in s["exemplars"]]
wrong = [e for e in got if e[0] not in recorded or float(e[1]) != recorded[e[0]] / 1e9]
report(recorded and got and not wrong,
       "prometheus: %d exemplars of the native histogram stored (query_exemplars), "
       "each a recorded trace and value" % len(got), wrong[:5])
# the summary, scraped as protobuf: the quantile series, _sum and _count
stored("prometheus: the summary's _count exact", S + "_count")
stored("prometheus: the summary's _sum exact", S + "_sum")
alpha, want, wrong = summary_wrong({dict(k[1])["quantile"]: v for k, v in
                                    query(S + '{job="percpu-daemon"}').items()}, tmp)
report(want and not wrong, "prometheus: the summary's %d quantile series each within "
       "alpha %.3g %% of the exact one" % (len(want), 100 * alpha), wrong)
# the pushed group, scraped from the Pushgateway with honor_labels: each
# series exactly the tally, with the group's job and grouping labels
group = {("job", push_job), ("instance", push_instance), ("path", push_path)}
for name in ("daemon_requests_total", "daemon_request_duration_seconds_bucket",
             "daemon_request_duration_seconds_count", "daemon_request_duration_seconds_sum",
             S + "_count", S + "_sum", "daemon_workers_done"):
    want = {(n, ls | group): v for (n, ls), v in tallies.items() if n == name}
    got = query('%s{job="%s"}' % (name, push_job), drop=("__name__",))
    wrong = [(k, got.get(k), v) for k, v in want.items()
             if k not in got or float(got[k]) != v[0] / v[1]]
    extra = [k for k in got if k not in want]
    report(want and not wrong and not extra,
           "prometheus: pushed %s, every series exactly the tally with job=%s, "
           "instance=%s, path=%s" % (name, push_job, push_instance, push_path),
           (wrong[:3], extra[:3]))
alpha, want, wrong = summary_wrong({dict(k[1])["quantile"]: v for k, v in
                                    query(S + '{job="%s"}' % push_job).items()}, tmp)
report(want and not wrong, "prometheus: the pushed summary's quantiles within alpha", wrong)
EOF
	pychecks "prometheus" "$TMP/prom.py" "$TMP" "http://127.0.0.1:$PPORT/api/v1/query" "$WORKERS" \
		"$PUSH_JOB" "$PUSH_INSTANCE" "$METRICS_PATH"
	check "prometheus: stopped cleanly" stop "$PROM_PID"
	PROM_PID=
fi

# ---- shutdown ----

# gateway_metrics: the Pushgateway's own exposition, into $TMP/gateway.metrics
gateway_metrics()
{
	"$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
		"http://127.0.0.1:$GPORT/metrics" >"$TMP/gateway.metrics" 2>&1 || true
}
if [ "$PROMETHEUS" = 1 ]; then
	gateway_metrics
	check "pushgateway: holds the group of job $PUSH_JOB before the daemon stops" \
		grep -q "job=\"$PUSH_JOB\"" "$TMP/gateway.metrics"
fi

check "percpu-daemon: exits 0 on SIGTERM" stop "$DAEMON_PID"
DAEMON_PID=
check "percpu-daemon: says it stopped" grep -q '^stopped$' "$TMP/daemon.out"
if [ "$PROMETHEUS" = 1 ]; then
	check "percpu-daemon: deleted its group at shutdown (pcpu_metrics_push DELETE)" \
		grep -q '^deleted$' "$TMP/daemon.out"
	# the gateway's own exposition: no series of the group is left
	gateway_metrics
	check "pushgateway: answers /metrics after the delete" grep -q '^# TYPE' "$TMP/gateway.metrics"
	check "pushgateway: no series of job $PUSH_JOB left" \
		eval '! grep -q "job=\"$PUSH_JOB\"" "$TMP/gateway.metrics"'
	check "pushgateway: stopped cleanly" stop "$GW_PID"
	GW_PID=
fi
finish
