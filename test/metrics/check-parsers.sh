#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Writes both formats with write-metrics and runs a real parser on them.
# usage: check-parsers.sh python|promtool WRITE-METRICS CHECK_PARSERS.PY
# Exit 77 (skipped) when the parser is not installed.
set -u
what=$1
writer=$2
script=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
"$writer" "$tmp/prom.txt" "$tmp/om.txt" "$tmp/om-created.txt" || { echo "write-metrics failed"; exit 1; }
end=$(($(date +%s) + 1))
case $what in
python)
	[ -x /usr/bin/python3 ] || { echo "no /usr/bin/python3: skipped"; exit 77; }
	exec /usr/bin/python3 "$script" "$tmp/prom.txt" "$tmp/om.txt" "$tmp/om-created.txt" \
		"$start" "$end"
	;;
promtool)
	command -v promtool >/dev/null 2>&1 || { echo "no promtool: skipped"; exit 77; }
	if promtool check metrics < "$tmp/prom.txt"; then
		echo "promtool check metrics: no problem"
		exit 0
	fi
	cat "$tmp/prom.txt"
	exit 1
	;;
esac
exit 2
