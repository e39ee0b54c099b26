#!/usr/bin/env sh
# SPDX-License-Identifier: MIT
#
# percpu-stat against a segment that another process made (shared-peer
# create: requests 12345, bytes 2^20, depth -3): plain output, repeats,
# both exposition formats (parsed by prometheus_client and promtool when
# installed), its errors and exit codes, a name of 255 bytes, and what a
# hostile or unlucky /dev/shm holds: a FIFO at the name, a segment still
# being made (zeros), one that is never finished, one cut short while
# percpu-stat -i reads it.
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
# conflicting formats are refused; repeated expositions are marked apart
"$stat" --prometheus --openmetrics "$name" 2>/dev/null
[ $? -eq 2 ] || fail "--prometheus --openmetrics: not refused with 2"
"$stat" --openmetrics -n 2 -i 0.01 "$name" > "$tmp/om2.txt" || fail "--openmetrics -n 2 -i"
[ "$(grep -c '^# percpu-stat report ' "$tmp/om2.txt")" = 2 ] || fail "-i: two marked reports"
[ "$(grep -c '^# EOF$' "$tmp/om2.txt")" = 2 ] || fail "-i: two whole expositions"
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
"$stat" -i 0 "$name" 2>/dev/null; [ $? -eq 2 ] || fail "-i 0: exit 2"
"$stat" 2>/dev/null; [ $? -eq 2 ] || fail "no NAME: exit 2"
"$stat" --help | grep -q '^usage: percpu-stat' || fail "--help"
# a name of 255 bytes (after the slash) is read whole, with or without its slash
"$peer" create "$long" >/dev/null || fail "shared-peer create (a 255-byte name)"
"$stat" "$long" > "$tmp/long" 2> "$tmp/err" || fail "a 255-byte name: $(cat "$tmp/err")"
grep -Eq '^requests +12345 ' "$tmp/long" || fail "a 255-byte name: requests"
"$stat" "${long#/}" > "$tmp/long" 2> "$tmp/err" || fail "a 255-byte name without its slash"
grep -Eq '^requests +12345 ' "$tmp/long" || fail "a 255-byte name without its slash: requests"

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
