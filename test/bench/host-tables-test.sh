#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/host-tables.sh --report on saved outputs (host-tables/: two runs of
# the add, one series, the shapes' first rounds, from a Zen 4 run of 7 Dec,
# cut to the lines the script reads) against the tables it must print.
# Usage: host-tables-test.sh SCRIPT FIXTURES EXPECTED
set -eu
out=$(sh "$1" --report "$2" | sed 's/Raw outputs: `.*`\./Raw outputs: `OUT`./')
if ! printf '%s\n' "$out" | diff -u "$3" -; then
	echo "host-tables: the tables differ from $3" >&2
	exit 1
fi
echo "ok - host-tables.sh --report prints the expected tables"
