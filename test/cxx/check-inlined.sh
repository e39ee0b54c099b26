#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The hot calls of <percpu/metrics.hpp> are inlined into test/cxx/inlined.cpp's
# large function: the archive built from it defines no copy of any of them
# (a copy would be a call on every add), and it calls the counter's slow
# path (the C add was inlined into it).
#
# usage: check-inlined.sh NM INLINED.a
# Prints a TAP report.
set -u

nm=$1
archive=$2
symbols=$("$nm" -C "$archive" 2>/dev/null)

echo "1..2"
copies=$(echo "$symbols" | grep -E ' [tTwW] ' |
	grep -E 'percpu::(counter|counter_ref|counter_double|gauge_ref|gauge_double|histogram_ref)::(add|inc|dec|set|observe)\(')
if [ -z "$copies" ]; then
	echo "ok 1 - no out-of-line copy of a hot call"
else
	echo "not ok 1 - not inlined, a copy is called instead:"
	echo "$copies" | sed 's/^/# /'
fi
if echo "$symbols" | grep -qE ' U __pcpu_counter_add_slow$'; then
	echo "ok 2 - the inlined adds call their slow path"
else
	echo "not ok 2 - $archive calls no __pcpu_counter_add_slow: nothing was built"
fi
[ -z "$copies" ] && echo "$symbols" | grep -qE ' U __pcpu_counter_add_slow$'
