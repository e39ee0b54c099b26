#!/bin/sh
# SPDX-License-Identifier: MIT
#
# percpu-stat fails when its output cannot be written: --help and
# --version into /dev/full (ENOSPC) exit non-zero and say so on stderr, as
# a report does, and exit 0 into /dev/null.
#
# usage: check-write-errors.sh PERCPU-STAT
# Prints a TAP report.
set -u

stat=$1
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT

echo "1..4"
n=0
for opt in --help --version; do
	n=$((n + 1))
	if "$stat" "$opt" >/dev/null 2>"$err"; then
		echo "ok $n - percpu-stat $opt >/dev/null exits 0"
	else
		echo "not ok $n - percpu-stat $opt >/dev/null exits $?"
		sed 's/^/# /' "$err"
		failed=1
	fi
	n=$((n + 1))
	if [ ! -w /dev/full ]; then
		echo "ok $n # SKIP no writable /dev/full"
		continue
	fi
	"$stat" "$opt" >/dev/full 2>"$err"
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'write error' "$err"; then
		echo "ok $n - percpu-stat $opt >/dev/full exits $rc with: $(cat "$err")"
	else
		echo "not ok $n - percpu-stat $opt >/dev/full exits $rc"
		sed 's/^/# /' "$err"
		failed=1
	fi
done
exit ${failed:-0}
