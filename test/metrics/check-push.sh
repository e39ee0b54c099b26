#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test-push against a real Prometheus Pushgateway (Debian:
# prometheus-pushgateway, 1.5.1 in bookworm): started here on a free
# loopback port, with no persistence file and basic authentication from a
# --web.config.file (user "pusher", password "s3cret", bcrypt cost 4),
# stopped on exit whatever happens.
#
# usage: check-push.sh TEST-PUSH [CRITERION-ARGS...]
# Prints TAP (the test's, its own notes on stderr); skipped ("1..0 # SKIP",
# as TAP says) without prometheus-pushgateway or python3 (the free port).
set -u

test_push=$1
shift
gw=${PCPU_TEST_PUSHGATEWAY_BIN:-$(command -v prometheus-pushgateway || command -v pushgateway)}
skip()
{
	echo "1..0 # SKIP $*"
	echo "skipped: $*" >&2
	exit 0
}
[ -n "$gw" ] && [ -x "$gw" ] || skip "no prometheus-pushgateway (Debian: apt-get install prometheus-pushgateway)"
command -v python3 >/dev/null 2>&1 || skip "no python3 to pick a free port"

dir=$(mktemp -d) || exit 1
pid=
cleanup()
{
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# the bcrypt hash of "s3cret" (python3: crypt.crypt('s3cret', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))
cat >"$dir/web.yml" <<'YML'
basic_auth_users:
  pusher: $2b$04$kRchOMMok.gPg1.fCVtL7ONy0nPhe9XwZkVJgmtWgngOlFMvOytZ.
YML

for try in 1 2 3; do
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$gw" --web.listen-address="127.0.0.1:$port" --web.config.file="$dir/web.yml" \
		--persistence.file="" --log.level=warn >"$dir/gateway.log" 2>&1 &
	pid=$!
	# up when it accepts a connection; gone if the port was taken meanwhile
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break 2
		sleep 0.1
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
done
[ -n "$pid" ] || { echo "the Pushgateway did not start:" >&2; cat "$dir/gateway.log" >&2; exit 1; }
echo "$("$gw" --version 2>&1 | head -1) on 127.0.0.1:$port" >&2

PCPU_TEST_PUSHGATEWAY="http://127.0.0.1:$port" PCPU_TEST_PUSHGATEWAY_USER=pusher \
	PCPU_TEST_PUSHGATEWAY_PASSWORD=s3cret "$test_push" "$@"
rc=$?
[ $rc = 0 ] || { echo "the gateway's log:" >&2; cat "$dir/gateway.log" >&2; }
exit $rc
