#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Prints debian/libpercpu1.symbols from the version script: every symbol of
# each node PERCPU_X.Y, and the node itself, at minimal version X.Y.0 (the
# release that brought the node). Regenerate after adding a symbol:
#
#   debian/symbols-from-map.sh lib/libpercpu.map >debian/libpercpu1.symbols
#
# test/packaging/check-debian.sh fails when the two disagree, and the
# package build fails on any symbol the file does not list
# (DPKG_GENSYMBOLS_CHECK_LEVEL=4 in debian/rules).
set -eu

map=${1:-lib/libpercpu.map}

echo '# Generated from lib/libpercpu.map by debian/symbols-from-map.sh: do not edit.'
echo 'libpercpu.so.1 libpercpu1 #MINVER#'
echo '* Build-Depends-Package: libpercpu-dev'
awk '
	/^[ \t]*#/ { next }
	/^PERCPU_[0-9]+\.[0-9]+[ \t]*\{/ {
		node = $1
		ver = node
		sub(/^PERCPU_/, "", ver)
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
