#!/usr/bin/env sh
# SPDX-License-Identifier: MIT
#
# percpu-stat against a segment that another process made (shared-peer
# create: requests 12345, bytes 2^20, depth -3): plain output, repeats,
# both exposition formats (parsed by prometheus_client and promtool when
# installed), repeated expositions each whole, --listen scraped over HTTP
# (with python3), its errors and exit codes, a name of 255 bytes, and what a
# hostile or unlucky /dev/shm holds: a FIFO at the name, a segment still
# being made (zeros), one that is never finished, one of an older layout
# (0.3's), one cut short while percpu-stat -i reads it.
# usage: percpu-stat-test.sh PERCPU-STAT SHARED-PEER
set -u
stat=$1
peer=$2
name=/pcpu-stat-test-$$
tmp=$(mktemp -d) || exit 1
long=/pcpu-stat-long-$$-$(printf '%0255d' 0 | tr 0 x)
long=$(printf '%.256s' "$long") # a slash and 255 bytes: the longest name
trap '"$peer" unlink "$name" 2>/dev/null; "$peer" unlink "$long" 2>/dev/null;
      rm -f /dev/shm/pcpu-stat-*-$$; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$peer" create "$name" >/dev/null || fail "shared-peer create"

"$stat" "$name" > "$tmp/plain" || fail "percpu-stat NAME"
cat "$tmp/plain"
grep -Eq '^requests +12345 +[0-9]+ ±[0-9]+$' "$tmp/plain" || fail "plain: requests"
grep -Eq '^bytes +1048576 +1048576 ±[0-9]+$' "$tmp/plain" || fail "plain: bytes"
grep -Eq '^depth +-3 ' "$tmp/plain" || fail "plain: depth"
# the leading slash may be left out; -n 3 -i 0.01 gives three reports
"$stat" -n 3 -i 0.01 "${name#/}" > "$tmp/three" || fail "percpu-stat -n 3 -i"
[ "$(grep -c '^requests ' "$tmp/three")" = 3 ] || fail "-n 3: three reports"

"$stat" --prometheus "$name" > "$tmp/prom.txt" || fail "--prometheus"
"$stat" --openmetrics "$name" > "$tmp/om.txt" || fail "--openmetrics"
cat "$tmp/om.txt"
grep -qx 'requests_total 12345' "$tmp/prom.txt" || fail "prometheus: requests_total"
grep -qx '# TYPE requests_total counter' "$tmp/prom.txt" || fail "prometheus: TYPE"
grep -qx '# TYPE requests counter' "$tmp/om.txt" || fail "openmetrics: TYPE"
[ "$(tail -n 1 "$tmp/om.txt")" = "# EOF" ] || fail "openmetrics: # EOF last"
# conflicting formats are refused, with a message
"$stat" --prometheus --openmetrics "$name" 2> "$tmp/err"
[ $? -eq 2 ] || fail "--prometheus --openmetrics: not refused with 2"
grep -q 'exclude each other' "$tmp/err" || fail "--prometheus --openmetrics: $(cat "$tmp/err")"
# repeated expositions: each whole, and apart. Text: each starts with a
# comment line; OpenMetrics, which allows no other comment, ends each with # EOF
"$stat" --prometheus -n 3 -i 0.01 "$name" > "$tmp/prom3.txt" || fail "--prometheus -n 3 -i"
"$stat" --openmetrics -n 3 -i 0.01 "$name" > "$tmp/om3.txt" || fail "--openmetrics -n 3 -i"
[ "$(sed -n 1p "$tmp/prom3.txt")" = "# percpu-stat report 1" ] || fail "text: report 1 first"
[ "$(grep -c '^# percpu-stat report [123]$' "$tmp/prom3.txt")" = 3 ] || fail "text: 3 marks"
[ "$(grep -c '^requests_total 12345$' "$tmp/prom3.txt")" = 3 ] || fail "text: 3 reports"
[ "$(grep -c '^# EOF$' "$tmp/om3.txt")" = 3 ] || fail "openmetrics: three # EOF"
[ "$(tail -n 1 "$tmp/om3.txt")" = "# EOF" ] || fail "openmetrics: # EOF last"
grep -q '^# percpu' "$tmp/om3.txt" && fail "openmetrics: a comment OpenMetrics forbids"
[ "$(grep -c '^requests_total 12345$' "$tmp/om3.txt")" = 3 ] || fail "openmetrics: 3 reports"
# split, each report is the one-shot exposition, which the parsers check below
mkdir "$tmp/split"
awk -v d="$tmp/split" '/^# percpu-stat report /{ n++; next } { print > (d "/prom" n) }' \
	"$tmp/prom3.txt"
awk -v d="$tmp/split" '{ print > (d "/om" n + 1) } /^# EOF$/ { close(d "/om" n + 1); n++ }' \
	"$tmp/om3.txt"
for k in 1 2 3; do
	cmp -s "$tmp/split/prom$k" "$tmp/prom.txt" || fail "text report $k is not the exposition"
	cmp -s "$tmp/split/om$k" "$tmp/om.txt" || fail "openmetrics report $k is not the exposition"
done
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null; then
	/usr/bin/python3 - "$tmp/prom.txt" "$tmp/om.txt" <<'PY' || fail "prometheus_client"
import sys
from prometheus_client.parser import text_string_to_metric_families as prom
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
want = {"requests_total": 12345, "bytes_total": 1 << 20, "depth": -3}
for parse, path in ((prom, sys.argv[1]), (om, sys.argv[2])):
    got = {s.name: s.value for f in parse(open(path).read()) for s in f.samples}
    assert got == want, (path, got)
    helps = {f.name: f.documentation for f in parse(open(path).read())}
    assert helps.get("bytes", helps.get("bytes_total")) == 'Bytes sent.\nWith a "newline" and a \\.', helps
print("prometheus_client: both formats parse, values exact")
PY
fi
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics < "$tmp/prom.txt" || fail "promtool check metrics"
fi

# labels and histograms: a row per tuple, a histogram's sum and cumulative
# buckets; one family per name in the exposition, which promtool accepts
lab=/pcpu-stat-lab-$$
"$peer" create-labelled "$lab" >/dev/null || fail "shared-peer create-labelled"
"$stat" "$lab" > "$tmp/lab" || { "$peer" unlink "$lab"; fail "percpu-stat on labels"; }
"$stat" --prometheus "$lab" > "$tmp/lab.txt" || { "$peer" unlink "$lab"; fail "--prometheus on labels"; }
"$stat" --openmetrics "$lab" > "$tmp/labom.txt" || { "$peer" unlink "$lab"; fail "--openmetrics on labels"; }
"$peer" unlink "$lab"
cat "$tmp/lab"
grep -Eq '^http_requests\{code="200",method="get"\} +7 ' "$tmp/lab" || fail "plain: a labelled row"
grep -Eq '^request_size_bytes\{path="/api"\} +5050 ' "$tmp/lab" || fail "plain: a histogram's sum"
grep -qx '  count 2, cumulative: le=10:0 le=100:1 le=1000:1 le=+Inf:2' "$tmp/lab" ||
	fail "plain: a histogram's buckets"
grep -qx 'http_requests_total{code="200",method="get"} 7' "$tmp/lab.txt" || fail "text: a tuple"
[ "$(grep -c '^# TYPE http_requests_total counter$' "$tmp/lab.txt")" = 1 ] || fail "text: one family"
grep -qx 'request_size_bytes_bucket{path="/api",le="+Inf"} 2' "$tmp/labom.txt" ||
	fail "openmetrics: +Inf bucket"
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics < "$tmp/lab.txt" || fail "promtool check metrics: labels"
fi

# errors: a missing segment (1), a foreign file (1), bad usage (2)
"$stat" /pcpu-stat-none-$$ 2> "$tmp/err" && fail "a missing segment"
[ $? -eq 1 ] || fail "a missing segment: exit 1"
grep -q 'No such file' "$tmp/err" || fail "a missing segment: message"
head -c 8192 /dev/urandom > /dev/shm/pcpu-stat-junk-$$ 2>/dev/null &&
{
	"$stat" /pcpu-stat-junk-$$ 2> "$tmp/err"; rc=$?
	rm -f /dev/shm/pcpu-stat-junk-$$
	[ $rc -eq 1 ] || fail "a foreign segment: exit $rc"
	grep -q 'not a percpu shared segment' "$tmp/err" || fail "a foreign segment: message"
}
# a segment of 0.3 (layout 2: a real segment with its version set to 2):
# refused, naming the layout found and the one this percpu-stat reads
if [ -w /dev/shm ] && cp "/dev/shm${name}" /dev/shm/pcpu-stat-old-$$ 2>/dev/null; then
	printf '\002' | dd of=/dev/shm/pcpu-stat-old-$$ bs=1 seek=8 conv=notrunc 2>/dev/null
	"$stat" /pcpu-stat-old-$$ 2> "$tmp/err"; rc=$?
	rm -f /dev/shm/pcpu-stat-old-$$
	cat "$tmp/err"
	[ $rc -eq 1 ] || fail "a layout-2 segment: exit $rc"
	grep -q 'of layout 2 (made by percpu 0.3).*reads layout 3 only' "$tmp/err" ||
		fail "a layout-2 segment: message"
fi
"$stat" -i 0 "$name" 2>/dev/null; [ $? -eq 2 ] || fail "-i 0: exit 2"
"$stat" 2>/dev/null; [ $? -eq 2 ] || fail "no NAME: exit 2"
"$stat" --help | grep -q '^usage: percpu-stat' || fail "--help"
"$stat" --version | grep -Eq '^percpu-stat [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
# a name of 255 bytes (after the slash) is read whole, with or without its slash
"$peer" create "$long" >/dev/null || fail "shared-peer create (a 255-byte name)"
"$stat" "$long" > "$tmp/long" 2> "$tmp/err" || fail "a 255-byte name: $(cat "$tmp/err")"
grep -Eq '^requests +12345 ' "$tmp/long" || fail "a 255-byte name: requests"
"$stat" "${long#/}" > "$tmp/long" 2> "$tmp/err" || fail "a 255-byte name without its slash"
grep -Eq '^requests +12345 ' "$tmp/long" || fail "a 255-byte name without its slash: requests"

# --listen: usage errors (2), a missing segment (1)
for bad in "--listen 127.0.0.1:0 -i 1" "--listen 127.0.0.1:0 -n 2" "--prometheus --listen :0" \
	"--listen 127.0.0.1:0 --openmetrics" "--listen 9100" "--listen 127.0.0.1:65536" \
	"--listen 127.0.0.1:" "--listen localhost:0" "--listen [::1]x:0"; do
	"$stat" $bad "$name" > /dev/null 2> "$tmp/err"; rc=$?
	[ $rc -eq 2 ] || fail "$bad: exit $rc, not 2"
	grep -q 'percpu-stat: --listen' "$tmp/err" || fail "$bad: $(cat "$tmp/err")"
done
"$stat" --listen 127.0.0.1:0 /pcpu-stat-none-$$ 2> "$tmp/err" && fail "--listen: a missing segment"
grep -q 'No such file' "$tmp/err" || fail "--listen: a missing segment: $(cat "$tmp/err")"

# --listen: an exporter serving the segment at /metrics until SIGTERM
"$stat" --listen 127.0.0.1:0 "$name" > "$tmp/listen" 2> "$tmp/err" & pid=$!
for k in $(seq 100); do
	grep -q '^listening on' "$tmp/listen" || ! kill -0 $pid 2>/dev/null && break
	sleep 0.05
done
if grep -q 'without libmicrohttpd' "$tmp/err"; then
	wait $pid; rc=$?
	[ $rc -eq 1 ] || fail "--listen without libmicrohttpd: exit $rc, not 1"
	echo "--listen: refused, built without libmicrohttpd"
elif [ -x /usr/bin/python3 ]; then
	port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$tmp/listen")
	[ -n "$port" ] || { kill $pid; fail "--listen: no port in: $(cat "$tmp/listen" "$tmp/err")"; }
	# an exact count, the format by Accept (as the one-shot output), gzip, 404, 405
	/usr/bin/python3 - "$port" "$tmp/prom.txt" "$tmp/om.txt" <<'PY' || { kill $pid; fail "--listen: scrapes"; }
import gzip, sys, urllib.error, urllib.request
port, prom, om = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
url = "http://127.0.0.1:%s/metrics" % port
def get(headers={}, method="GET", path="/metrics"):
    req = urllib.request.Request(url.replace("/metrics", path), headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
st, h, body = get()
assert st == 200 and h["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", (st, h)
assert body.decode() == prom, body
st, h, body = get({"Accept": "application/openmetrics-text;version=1.0.0,application/"
                   "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"})
assert h["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8", h
assert body.decode() == om, body
st, h, body = get({"Accept-Encoding": "gzip"})
coding = h["Content-Encoding"]  # None where libpercpu has no zlib
if coding == "gzip":
    body = gzip.decompress(body)
assert body.decode() == prom, body
assert get(path="/")[0] == 404
st, h, body = get(method="POST")
assert st == 405 and h["Allow"] == "GET, HEAD", (st, h)
print("--listen: text, OpenMetrics, Content-Encoding %s, 404, 405" % coding)
PY
	# a writer's add shows in the next scrape; the port is taken; SIGTERM stops it
	"$peer" write "$name" > /dev/null || fail "shared-peer write"
	/usr/bin/python3 -c 'import sys, urllib.request as u
body = u.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
assert "requests_total 12346\n" in body, body' "$port" || { kill $pid; fail "--listen: +1"; }
	"$stat" --listen "127.0.0.1:$port" "$name" 2> "$tmp/err2"; rc=$?
	[ $rc -eq 1 ] || { kill $pid; fail "--listen on a port in use: exit $rc"; }
	grep -q 'in use' "$tmp/err2" || { kill $pid; fail "--listen on a port in use: $(cat "$tmp/err2")"; }
	kill -TERM $pid
	wait $pid; rc=$?
	[ $rc -eq 0 ] || fail "--listen: exit $rc after SIGTERM: $(cat "$tmp/err")"
else
	kill $pid; wait $pid
	echo "--listen: not scraped (no /usr/bin/python3)"
fi

if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	# a FIFO planted at the name: refused at once, not waited on for ever
	mkfifo /dev/shm/pcpu-stat-fifo-$$ || fail "mkfifo"
	timeout 20 "$stat" /pcpu-stat-fifo-$$ 2> "$tmp/err"; rc=$?
	[ $rc -eq 1 ] || fail "a FIFO: exit $rc (124: it hung)"
	grep -q 'not a percpu shared segment' "$tmp/err" || fail "a FIFO: message"

	# a segment its creator has sized but not filled (zeros): waited for; here
	# it becomes a finished segment (renamed over it) while percpu-stat waits
	head -c 8192 /dev/zero > /dev/shm/pcpu-stat-zero-$$
	"$peer" create /pcpu-stat-done-$$ >/dev/null || fail "shared-peer create"
	"$stat" /pcpu-stat-zero-$$ > "$tmp/zero" 2> "$tmp/err" & pid=$!
	sleep 0.3
	mv /dev/shm/pcpu-stat-done-$$ /dev/shm/pcpu-stat-zero-$$
	wait $pid || fail "a segment being made: exit $?: $(cat "$tmp/err")"
	grep -Eq '^requests +12345 ' "$tmp/zero" || fail "a segment being made: requests"

	# one that is never finished: a bounded wait, then a message that says so
	head -c 8192 /dev/zero > /dev/shm/pcpu-stat-never-$$
	timeout 20 "$stat" /pcpu-stat-never-$$ 2> "$tmp/err"; rc=$?
	[ $rc -eq 1 ] || fail "a segment never finished: exit $rc (124: it waited for ever)"
	grep -q 'not ready' "$tmp/err" || fail "a segment never finished: $(cat "$tmp/err")"

	# cut short while percpu-stat -i reads it: an error and exit 1, not SIGBUS
	"$peer" create /pcpu-stat-cut-$$ >/dev/null || fail "shared-peer create"
	"$stat" -i 0.02 /pcpu-stat-cut-$$ > "$tmp/cut" 2> "$tmp/err" & pid=$!
	for k in $(seq 100); do grep -q '^requests' "$tmp/cut" && break; sleep 0.05; done
	grep -q '^requests' "$tmp/cut" || fail "percpu-stat -i never reported"
	truncate -s 4096 /dev/shm/pcpu-stat-cut-$$
	wait $pid; rc=$?
	[ $rc -eq 1 ] || fail "a segment cut short: exit $rc (135: SIGBUS)"
	grep -q 'truncated' "$tmp/err" || fail "a segment cut short: $(cat "$tmp/err")"
fi
echo "percpu-stat: ok"
