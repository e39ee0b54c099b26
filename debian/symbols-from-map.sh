#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Prints a symbols file from a version script: every symbol of each node
# PREFIX_X.Y, and the node itself, at minimal version X.Y.0 (the release
# that brought the node). Regenerate after adding a symbol:
#
#   debian/symbols-from-map.sh lib/libpercpu.map libpercpu.so.2 libpercpu2 \
#       >debian/libpercpu2.symbols
#   debian/symbols-from-map.sh metrics/libpercpu-metrics.map \
#       libpercpu-metrics.so.2 libpercpu-metrics2 >debian/libpercpu-metrics2.symbols
#
# test/packaging/check-debian.sh fails when they disagree, and the package
# build fails on any symbol a file does not list
# (DPKG_GENSYMBOLS_CHECK_LEVEL=4 in debian/rules).
set -eu

map=$1
soname=$2
package=$3

echo "# Generated from $map by debian/symbols-from-map.sh: do not edit."
echo "$soname $package #MINVER#"
echo '* Build-Depends-Package: libpercpu-dev'
awk '
	/^[ \t]*#/ { next }
	/^PERCPU(_METRICS)?_[0-9]+\.[0-9]+[ \t]*\{/ {
		node = $1
		ver = node
		sub(/^PERCPU(_METRICS)?_/, "", ver)
		ver = ver ".0"
		printf " %s@%s %s\n", node, node, ver
		next
	}
	/global:/ { global = 1; next }
	/local:/ { global = 0; next }
	/^[ \t]*}/ { global = 0; next }
	global && /;/ {
		gsub(/[ \t;]/, "")
		if ($0 != "")
			printf " %s@%s %s\n", $0, node, ver
	}
' "$map" | LC_ALL=C sort
