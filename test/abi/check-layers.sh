#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The floors of lib/, checked from the includes: a file includes headers of
# its own floor or of the floors below, never above; a unit includes no
# other unit's headers; a client includes no unit's internals (only its
# public header or its class interface, as stat_class.h); and every file of
# lib/ has its floor here, so that
# a new file is placed on purpose. (No import runs up a floor, so there is
# no circle across floors; units and clients on one floor are checked by
# the group rule.)
#
#   0 base      CPU and update path, arch primitives' users, atomics, misuse,
#               policy, the fold engine (fold.h), the name validator
#   1 arena     per-CPU memory
#   2 registry  live objects, the refresher, fork; a client hook
#   3 units     counter, stat set, charge, shared segment: one group each
#   4 clients   metrics list, exposition, histograms, families, gauges,
#               collectors, the /metrics handler and server
#
# usage: check-layers.sh LIBDIR      Prints a TAP report.
set -u
lib=$1

floor_of()
{
	case $1 in
	atomics.h | misuse.h | misuse.c | policy.h | fold.h | pair.h | pair_lock.c | cpu.c | fence.c | \
	cpu_internal.h | \
	rseq_area.c | rseq_area.h | slot_owner.c | slot_owner.h | names.h | names.c)
		echo "0 base" ;;
	arena.c | arena.h) echo "1 arena" ;;
	registry.c | registry.h | refresher.c) echo "2 registry" ;;
	counter.c | counter_internal.h | counter_limited.c | percpu_counter.c) echo "3 counter" ;;
	stat_create.c | stat_fold.c | stat_read.c | stat_internal.h | stat_class.h) echo "3 stat" ;;
	charge.c) echo "3 charge" ;;
	shared_create.c | shared_fold.c | shared_open.c | shared_read.c | shared_internal.h | \
	shared_observe.c)
		echo "3 shared" ;;
	metrics.c | metrics_register.c | collectors.c | metrics_internal.h | exposition.c | \
	histogram.c | family.c | gauge.c | metrics_http.c | metrics_serve.c | process_metrics.c | \
	shared_expose.c) echo "4 clients" ;;
	*) echo "" ;;
	esac
}

n=0
failed=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
for path in "$lib"/*/*.c "$lib"/*/*.h "$lib"/../metrics/*.c "$lib"/../metrics/*.h; do
	file=${path##*/}
	set -- $(floor_of "$file")
	n=$((n + 1))
	if [ $# -eq 0 ]; then
		echo "not ok $n - $file has no floor in check-layers.sh" >>"$out"
		failed=$((failed + 1))
		continue
	fi
	floor=$1 group=$2 bad=
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$path"); do
		inc=${inc##*/}
		set -- $(floor_of "$inc")
		if [ $# -eq 0 ]; then
			bad="$bad $inc(unknown)"
		elif [ "$1" -gt "$floor" ]; then
			bad="$bad $inc(floor $1 above $floor)"
		elif [ "$1" -eq 3 ] && [ "$floor" -eq 3 ] && [ "$2" != "$group" ]; then
			bad="$bad $inc(unit $2, not $group)"
		elif [ "$1" -eq 3 ] && [ "$floor" -eq 4 ] && [ "${inc%_internal.h}" != "$inc" ]; then
			bad="$bad $inc(a unit's internals: clients use its class interface)"
		fi
	done
	if [ -n "$bad" ]; then
		echo "not ok $n - $file (floor $floor, $group) includes:$bad" >>"$out"
		failed=$((failed + 1))
	else
		echo "ok $n - $file: floor $floor ($group)" >>"$out"
	fi
done
echo "1..$n"
cat "$out"
[ "$failed" -eq 0 ]
