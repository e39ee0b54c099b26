#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# httpd-test.sh [--prometheus] HTTPD LOAD N
#
# Starts percpu-httpd (HTTPD) on 127.0.0.1 with a free port, sends exactly N
# GET / with percpu-load (LOAD; half on HTTP/1.1 keep-alive connections, half
# on HTTP/1.0, a connection each) and 3 GET /nope, then scrapes /metrics
# with python3's urllib and checks, exactly:
#   httpd_requests_total{code="200",method="GET"} == N (GET /; not the scrapes)
#   httpd_requests_total{code="404",method="GET"} == 3
#   httpd_scrapes_total           == the number of this scrape (it counts itself)
#   httpd_response_body_bytes_total grows by exactly the previous scrape's body
#   httpd_connections             == 1   (the scraper's own connection)
#   the histogram's +Inf bucket == its _count, and OpenMetrics ends in # EOF;
#   a scrape that accepts gzip gets it, and it inflates to the same counts.
# With --prometheus it then starts a real Prometheus on another free loopback
# port, scraping the daemon every second, and waits (at most 60 s) until its
# query API returns N for httpd_requests_total{code="200",method="GET"};
# sends M = N / 5 more GET / and waits for N + M; then asks it for what a
# dashboard asks: over the window, max - min of the series is exactly M,
# with no reset, and increase() and rate() cover at least M (they only
# extrapolate); histogram_quantile() of the latency histogram equals the
# quantile computed from the buckets that Prometheus returns for the same
# instant (so le labels, cumulative counts and +Inf parse as a histogram);
# the process metrics agree with /proc.
#
# Whatever happens, everything it started is killed and waited for. Prints
# one "ok"/"not ok" line per check and "N passed, N failed"; exit status 0
# when every check passed.
set -euo pipefail

PROMETHEUS=0
if [ "${1:-}" = --prometheus ]; then
	PROMETHEUS=1
	shift
fi
if [ $# -ne 3 ]; then
	echo "usage: httpd-test.sh [--prometheus] HTTPD LOAD N" >&2
	exit 2
fi
HTTPD=$1 LOAD=$2 N=$3
PY=${PYTHON:-python3}
GET_200='httpd_requests_total{code="200",method="GET"}'
GET_404='httpd_requests_total{code="404",method="GET"}'

TMP=$(mktemp -d "${TMPDIR:-/tmp}/percpu-httpd-test.XXXXXX")
HTTPD_PID= PROM_PID=
TEST_NAME=httpd-test CLEANUP_PIDS="PROM_PID HTTPD_PID"
. "$(dirname "$0")/test-helpers.sh"

# scrape FILE [ACCEPT]: GETs /metrics into FILE.body, its Content-Type into FILE.type
# scrape FILE [ACCEPT [ACCEPT-ENCODING]]: FILE.body (inflated if gzipped),
# FILE.type (Content-Type), FILE.encoding (Content-Encoding)
scrape()
{
	"$PY" - "http://127.0.0.1:$PORT/metrics" "$1" "${2:-text/plain}" "${3:-identity}" <<'EOF'
import gzip, sys, urllib.request
url, out, accept, encoding = sys.argv[1:5]
req = urllib.request.Request(url, headers={"Accept": accept, "Accept-Encoding": encoding})
with urllib.request.urlopen(req, timeout=10) as r:
    body = r.read()
    open(out + ".type", "w").write(r.headers.get("Content-Type", ""))
    coding = r.headers.get("Content-Encoding", "")
    open(out + ".encoding", "w").write(coding)
if coding == "gzip":
    body = gzip.decompress(body)
open(out + ".body", "wb").write(body)
EOF
}

# value FILE SERIES: the value of the sample SERIES (name{labels}) in FILE.body
value()
{
	awk -v n="$2" '$1 == n { print $2; found = 1; exit } END { if (!found) print "missing" }' "$1.body"
}

# eq WHAT GOT WANT
eq()
{
	if [ "$2" = "$3" ]; then
		return 0
	fi
	echo "# $1: got $2, want $3"
	return 1
}

# ---- the daemon ----

# the background job opens its output file when it gets to run: make the file
# first, or the sed below can look for it before it exists
: >"$TMP/httpd.out"
"$HTTPD" -a 127.0.0.1 -p 0 -t 2 >>"$TMP/httpd.out" 2>&1 &
HTTPD_PID=$!
PORT=
for i in $(seq 100); do
	PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$TMP/httpd.out")
	[ -n "$PORT" ] && break
	kill -0 "$HTTPD_PID" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$PORT" ]; then
	echo "not ok - percpu-httpd did not say it was listening within 10 s:"
	sed 's/^/# /' "$TMP/httpd.out"
	FAILED=$((FAILED + 1))
	finish
fi
echo "# percpu-httpd listening on 127.0.0.1:$PORT (pid $HTTPD_PID)"

N1=$((N / 2))
N2=$((N - N1))
check "load: $N1 GET / on HTTP/1.1 keep-alive, 4 threads" \
	timeout 60 "$LOAD" -H 127.0.0.1 -p "$PORT" -n "$N1" -c 4
check "load: $N2 GET / on HTTP/1.0, 2 threads" \
	timeout 60 "$LOAD" -H 127.0.0.1 -p "$PORT" -n "$N2" -c 2 -0
check "load: 3 GET /nope answered 404" \
	timeout 60 "$LOAD" -H 127.0.0.1 -p "$PORT" -u /nope -n 3 -c 1 -s 404

# MHD tells of a closed connection when its poll loop sees it: the gauge
# may lag the load client's exit by a moment
for i in $(seq 50); do
	scrape "$TMP/s1"
	[ "$(value "$TMP/s1" httpd_connections)" = 1 ] && break
	sleep 0.1
done
S=$(value "$TMP/s1" httpd_scrapes_total)
check "scrape 1: Prometheus text content type" \
	grep -q '^text/plain; version=0\.0\.4' "$TMP/s1.type"
check "scrape 1: $GET_200 is exactly $N" \
	eq get_200 "$(value "$TMP/s1" "$GET_200")" "$N"
check "scrape 1: $GET_404 is exactly 3" \
	eq get_404 "$(value "$TMP/s1" "$GET_404")" 3
check "scrape 1: httpd_connections is 1 (this scrape's)" \
	eq connections "$(value "$TMP/s1" httpd_connections)" 1
check "scrape 1: histogram +Inf bucket equals its count" \
	eq histogram "$(awk '$1 == "httpd_request_duration_seconds_bucket{le=\"+Inf\"}" { print $2 }' "$TMP/s1.body")" \
	"$(value "$TMP/s1" httpd_request_duration_seconds_count)"

scrape "$TMP/s2"
check "scrape 2: httpd_scrapes_total counts this scrape" \
	eq scrapes "$(value "$TMP/s2" httpd_scrapes_total)" $((S + 1))
check "scrape 2: body bytes grew by exactly scrape 1's body" \
	eq bytes $(($(value "$TMP/s2" httpd_response_body_bytes_total) - \
		    $(value "$TMP/s1" httpd_response_body_bytes_total))) \
	"$(stat -c %s "$TMP/s1.body")"
check "scrape 2: $GET_200 still $N" \
	eq get_200 "$(value "$TMP/s2" "$GET_200")" "$N"

scrape "$TMP/om" "application/openmetrics-text; version=1.0.0"
check "OpenMetrics: content type" \
	grep -q '^application/openmetrics-text' "$TMP/om.type"
check "OpenMetrics: $GET_200 is exactly $N" \
	eq get_200 "$(value "$TMP/om" "$GET_200")" "$N"
check "OpenMetrics: ends with # EOF" \
	eq eof "$(tail -n 1 "$TMP/om.body")" "# EOF"

check "scrape 1: process_open_fds is there" \
	grep -q '^process_open_fds [0-9][0-9]*$' "$TMP/s1.body"
scrape "$TMP/gz" "text/plain" "gzip"
check "gzip: a scrape that accepts gzip gets it" \
	eq encoding "$(cat "$TMP/gz.encoding")" gzip
check "gzip: it inflates to $GET_200 = $N" \
	eq get_200 "$(value "$TMP/gz" "$GET_200")" "$N"

# HEAD / (its own series, so the counts above stay exact), twice on one
# HTTP/1.1 connection: a scraper's or a load client's keep-alive is kept
check "keep-alive: two requests on one HTTP/1.1 connection, none closed" \
	"$PY" - 127.0.0.1 "$PORT" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
for i in range(2):
    c.request("HEAD", "/")
    r = c.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("Connection", "").lower() != "close", \
        (i, r.status, r.getheaders())
c.close()
EOF

# ---- Prometheus ----

if [ "$PROMETHEUS" = 1 ]; then
	PPORT=$(free_port)
	mkdir "$TMP/tsdb"
	cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: percpu-httpd
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
	prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" >"$TMP/prometheus.log" 2>&1 &
	PROM_PID=$!
	echo "# prometheus on 127.0.0.1:$PPORT (pid $PROM_PID), scraping 127.0.0.1:$PORT"
	GOT=none
	for i in $(seq 60); do
		kill -0 "$PROM_PID" 2>/dev/null || break
		GOT=$(pquery 'httpd_requests_total{job="percpu-httpd",method="GET",code="200"}')
		[ "$GOT" = "$N" ] && break
		sleep 1
	done
	echo "# prometheus query httpd_requests_total{method=\"GET\",code=\"200\"} returned: $GOT (after about $i s)"
	if ! check "prometheus: the query API returns exactly $N" eq prometheus "$GOT" "$N"; then
		sed 's/^/# /' "$TMP/prometheus.log" | tail -n 20
	fi
	# M more, while Prometheus scrapes: the series moves by exactly M
	M=$((N / 5))
	sleep 2 # a sample or two at N first
	check "load: $M more GET / while Prometheus scrapes" \
		timeout 60 "$LOAD" -H 127.0.0.1 -p "$PORT" -n "$M" -c 2
	N=$((N + M))
	SERIES='httpd_requests_total{job="percpu-httpd",method="GET",code="200"}'
	for i in $(seq 30); do
		GOT=$(pquery "$SERIES")
		[ "$GOT" = "$N" ] && break
		sleep 1
	done
	check "prometheus: the query API returns exactly $N after $M more" eq prometheus "$GOT" "$N"
	check "prometheus: max_over_time - min_over_time over the window is exactly $M" \
		eq moved "$(pquery "max_over_time($SERIES[10m]) - min_over_time($SERIES[10m])")" "$M"
	check "prometheus: no counter reset in the window" \
		eq resets "$(pquery "resets($SERIES[10m])")" 0
	INC=$(pquery "increase($SERIES[10m])")
	RATE=$(pquery "rate($SERIES[10m])")
	echo "# prometheus: increase $INC, rate $RATE per second, over 10m"
	check "prometheus: increase() and rate() * 600 cover at least the $M sent" \
		"$PY" -c "import sys; i, r, m = map(float, sys.argv[1:]); sys.exit(not (i >= m and r * 600 >= m - 1e-6))" \
		"$INC" "$RATE" "$M"
	check "prometheus: histogram_quantile() is the quantile of the buckets it stored" \
		"$PY" - "http://127.0.0.1:$PPORT/api/v1/query" <<'EOF'
import json, math, sys, time, urllib.parse, urllib.request

def query(expr, at):
    q = urllib.parse.urlencode({"query": expr, "time": repr(at)})
    with urllib.request.urlopen(sys.argv[1] + "?" + q, timeout=5) as r:
        return json.load(r)["data"]["result"]

at = time.time() - 1  # one instant for both queries
name = 'httpd_request_duration_seconds_bucket{job="percpu-httpd"}'
buckets = sorted((float(s["metric"]["le"]), float(s["value"][1])) for s in query(name, at))
assert buckets and math.isinf(buckets[-1][0]), buckets
for q in (0.5, 0.9, 0.99):
    got = float(query(f"histogram_quantile({q}, {name})", at)[0]["value"][1])
    # Prometheus's rule: the bucket where the rank falls, linear within it
    # (from 0 in the first bucket); the highest finite bound above it
    rank, lower, below = q * buckets[-1][1], 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            want = buckets[-2][0] if math.isinf(le) else \
                lower + (le - lower) * (rank - below) / (count - below)
            break
        lower, below = le, count
    print(f"# histogram_quantile({q}) = {got}, from the buckets {want}")
    assert math.isclose(got, want, rel_tol=1e-9), (q, got, want)
EOF
	# the process metrics, as Prometheus stored them, against /proc
	RSS=$(pquery 'process_resident_memory_bytes{job="percpu-httpd"}')
	PROC_RSS=$(($(awk '{ print $2 }' "/proc/$HTTPD_PID/statm") * $(getconf PAGESIZE)))
	echo "# prometheus: process_resident_memory_bytes $RSS, /proc says $PROC_RSS"
	check "prometheus: process_resident_memory_bytes within 2x of /proc's" \
		"$PY" -c "import sys; r, p = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (p / 2 < r < p * 2))" \
		"$RSS" "$PROC_RSS"
	check "prometheus: process_max_fds is the daemon's limit" \
		eq max_fds "$(pquery 'process_max_fds{job="percpu-httpd"}')" \
		"$(awk '$1 == "Max" && $2 == "open" { print $4 }' "/proc/$HTTPD_PID/limits")"
	check "prometheus: stopped cleanly" stop "$PROM_PID"
	PROM_PID=
fi

# ---- shutdown ----

check "percpu-httpd: exits 0 on SIGTERM" stop "$HTTPD_PID"
HTTPD_PID=
check "percpu-httpd: reports $N GET / on the way out" \
	grep -q "^stopped: $N GET / answered" "$TMP/httpd.out"
finish
