#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every function the public headers declare PCPU_INLINE (the inline fast
# paths) is inlined into test/abi/inlined.c's large function: the archive
# built from it defines none of them (a local copy would be a call on
# every add), and it calls their slow paths.
#
# usage: check-inlined.sh NM INCLUDE_DIR INLINED.a
# Prints a TAP report.
set -u

nm=$1
include=$2
archive=$3

names=$(grep -rhoE '^PCPU_INLINE [a-z0-9_ *]*[ *]([a-z0-9_]+)\(' "$include" |
	sed -E 's/.*[ *]([a-z0-9_]+)\($/\1/' | sort -u)
symbols=$("$nm" "$archive" 2>/dev/null)

echo "1..3"
count=$(echo "$names" | grep -c .)
if [ "$count" -ge 10 ]; then
	echo "ok 1 - $count functions are declared PCPU_INLINE"
else
	echo "not ok 1 - only $count functions declared PCPU_INLINE: the pattern is stale"
fi
copies=$(echo "$symbols" | grep -E ' [tTwW] ' | awk '{print $3}' | grep -xF "$names")
if [ -z "$copies" ]; then
	echo "ok 2 - no local copy of any of them"
else
	echo "not ok 2 - not inlined, a copy is called instead:"
	echo "$copies" | sed 's/^/# /'
fi
if echo "$symbols" | grep -qE ' U __pcpu_counter_add_slow$'; then
	echo "ok 3 - the inlined adds call their slow path"
else
	echo "not ok 3 - $archive calls no __pcpu_counter_add_slow: nothing was built"
fi
[ "$count" -ge 10 ] && [ -z "$copies" ] && echo "$symbols" | grep -qE ' U __pcpu_counter_add_slow$'
