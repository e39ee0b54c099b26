#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The shared library exports exactly the symbols its version script lists,
# each under a version node of that script, and nothing else.
#
# usage: check-exports.sh NM VERSION-SCRIPT SHARED-LIBRARY
# Prints a TAP report (one test per check).
set -u

nm=$1
map=$2
lib=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Symbols of every "global:" list in the script, and the version nodes.
awk '
	/^[ \t]*#/ { next }
	/^[A-Za-z_][A-Za-z0-9_.]*[ \t]*\{/ { sub(/[ \t]*\{.*/, ""); print $0 > NODES; next }
	/global:/ { global = 1; next }
	/local:/ { global = 0; next }
	/^[ \t]*}/ { global = 0; next }
	global && /;/ { gsub(/[ \t;]/, ""); if ($0 != "") print }
' NODES="$tmp/nodes" "$map" | sort -u > "$tmp/wanted"
sort -u -o "$tmp/nodes" "$tmp/nodes"

# Defined dynamic symbols: "ADDR TYPE NAME@@NODE"; the nodes themselves
# show up as absolute (A) symbols.
if ! "$nm" -D --defined-only "$lib" > "$tmp/nm"; then
	echo "1..1"
	echo "not ok 1 - $nm -D --defined-only $lib failed"
	exit 1
fi
awk '$2 != "A" { print $3 }' "$tmp/nm" > "$tmp/versioned"
sed 's/@.*//' "$tmp/versioned" | sort -u > "$tmp/exported"
awk '$2 == "A" { print $3 }' "$tmp/nm" | sort -u > "$tmp/abs"

failed=0
echo "1..5"

n=$(wc -l < "$tmp/wanted")
if [ "$n" -gt 0 ]; then
	echo "ok 1 - the version script lists $n symbols"
else
	echo "not ok 1 - no symbol found in $map"
	failed=1
fi

missing=$(comm -23 "$tmp/wanted" "$tmp/exported")
if [ -z "$missing" ]; then
	echo "ok 2 - every symbol of the version script is exported"
else
	echo "not ok 2 - listed but not exported:"
	echo "$missing" | sed 's/^/#   /'
	failed=1
fi

extra=$(comm -13 "$tmp/wanted" "$tmp/exported")
if [ -z "$extra" ]; then
	echo "ok 3 - nothing is exported that the version script does not list"
else
	echo "not ok 3 - exported but not listed:"
	echo "$extra" | sed 's/^/#   /'
	failed=1
fi

unversioned=$(grep -v '@' "$tmp/versioned" || true)
badnode=$(grep '@' "$tmp/versioned" | sed 's/.*@@*//' | sort -u | comm -23 - "$tmp/nodes")
if [ -z "$unversioned" ] && [ -z "$badnode" ]; then
	echo "ok 4 - every export carries a version node of the script"
else
	echo "not ok 4 - unversioned exports or unknown version nodes:"
	echo "$unversioned $badnode" | sed 's/^/#   /'
	failed=1
fi

badabs=$(comm -23 "$tmp/abs" "$tmp/nodes")
if [ -z "$badabs" ]; then
	echo "ok 5 - the only absolute symbols are the version nodes ($(tr '\n' ' ' < "$tmp/nodes"))"
else
	echo "not ok 5 - unexpected absolute symbols:"
	echo "$badabs" | sed 's/^/#   /'
	failed=1
fi

exit $failed
