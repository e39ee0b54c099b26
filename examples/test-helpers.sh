# SPDX-License-Identifier: MIT
# What the examples' test scripts share (sourced, not run): counted checks,
# a free port, stopping a process, a Prometheus query and the cleanup.
# The sourcing script sets, before it sources this file:
#   TEST_NAME      its name, for the summary line
#   PY             the python3 to run
#   TMP            its scratch directory (removed at exit)
#   CLEANUP_PIDS   names of the variables holding PIDs to stop at exit
#                  (each may be empty)
# and PPORT before it calls pquery.

PASSED=0 FAILED=0

# stops PID (TERM, then KILL after 10 s) and waits for it; returns its status
stop()
{
	local pid=$1 i

	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid"
}

cleanup()
{
	local v

	set +e
	for v in $CLEANUP_PIDS; do
		[ -n "${!v}" ] && stop "${!v}" >/dev/null 2>&1
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# check WHAT COMMAND...: runs COMMAND and counts it as the check WHAT
check()
{
	local what=$1

	shift
	if "$@"; then
		echo "ok - $what"
		PASSED=$((PASSED + 1))
	else
		echo "not ok - $what"
		FAILED=$((FAILED + 1))
	fi
}

# prints the summary and exits: 0 when every check passed
finish()
{
	echo "$TEST_NAME: $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit
}

# free_port: a TCP port on 127.0.0.1 that was free a moment ago
free_port()
{
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# pquery EXPR: the value of the first series the Prometheus query API (on
# 127.0.0.1:$PPORT) returns for the instant query EXPR, or "none"
pquery()
{
	"$PY" - "http://127.0.0.1:$PPORT/api/v1/query" "$1" <<'PY' || echo none
import json, sys, urllib.parse, urllib.request
q = urllib.parse.urlencode({"query": sys.argv[2]})
try:
    with urllib.request.urlopen(sys.argv[1] + "?" + q, timeout=5) as r:
        res = json.load(r)["data"]["result"]
    print(res[0]["value"][1] if res else "none")
except Exception:
    print("none")
PY
}
