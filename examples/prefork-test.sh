#!/usr/bin/env sh
# SPDX-License-Identifier: MIT
#
# prefork-test.sh PREFORK PERCPU-STAT: runs percpu-prefork (3 workers) on a
# segment of its own, reads it with percpu-stat from outside while it runs
# and once it holds its totals (-H), and checks that percpu-stat's exact
# values are the example's totals; then stops it and checks the segment is
# gone.
set -u
prefork=$1
stat=$2
name=/pcpu-prefork-test-$$
tmp=$(mktemp -d) || exit 1
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; rm -f "/dev/shm${name}"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

"$prefork" -w 3 -r 200000 -n "$name" -H > "$tmp/out" &
pid=$!
# read it while the workers count (it may not exist for a moment)
for i in $(seq 100); do
	"$stat" -n 3 -i 0.02 "$name" > "$tmp/live" 2>/dev/null && break
	sleep 0.05
done
for i in $(seq 600); do
	grep -q '^totals' "$tmp/out" && break
	kill -0 "$pid" 2>/dev/null || fail "percpu-prefork exited early"
	sleep 0.1
done
grep -qx 'totals agree' "$tmp/out" || fail "the example's own check"
"$stat" "$name" > "$tmp/stat" || fail "percpu-stat"
cat "$tmp/out" "$tmp/stat"
for item in requests response_bytes errors 'responses{code="200"}' 'responses{code="500"}' \
	response_size_bytes; do
	want=$(awk -v i="$item" '$1 == "total" && $2 == i { print $3 }' "$tmp/out")
	got=$(awk -v i="$item" '$1 == i { print $2 }' "$tmp/stat")
	[ -n "$want" ] && [ "$want" = "$got" ] || fail "$item: percpu-stat $got, example $want"
done
[ "$(awk '$1 == "total" && $2 == "requests" { print $3 }' "$tmp/out")" = 600000 ] ||
	fail "600000 requests"
"$stat" --openmetrics "$name" > "$tmp/om" || fail "percpu-stat --openmetrics"
grep -qx 'requests_total 600000' "$tmp/om" || fail "openmetrics"
grep -qx 'response_size_bytes_count 600000' "$tmp/om" || fail "openmetrics: the histogram's count"
[ "$(grep -c '^# TYPE responses counter$' "$tmp/om")" = 1 ] || fail "openmetrics: one family"
kill -TERM "$pid"
wait "$pid" || fail "percpu-prefork exit status"
pid=
"$stat" "$name" 2>/dev/null && fail "the segment outlived the example"
echo "prefork: ok"
