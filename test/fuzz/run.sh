#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzzes each target of a build made with -Dfuzzing=enabled for SECONDS
# (default: $FUZZ_SECONDS, else 600), one after the other, each on a copy
# of its seed corpus and regressions, under the sanitizers the build has.
# Fails if any target finds a crash, a leak, a sanitizer report, a failed
# check or a timeout; the input is kept under BUILD/fuzz-artifacts/ (copy
# it into test/fuzz/regressions/TARGET/ with the fix). Prints each
# target's final coverage (cov: edges, ft: features) and exec/s. Without
# TARGETs, every target that the build has (serve needs libmicrohttpd,
# push libcurl);
# a TARGET named and not built fails.
#   test/fuzz/run.sh BUILD [SECONDS [TARGET...]]
set -u
build=${1:?usage: run.sh BUILD [SECONDS [TARGET...]]}
secs=${2:-${FUZZ_SECONDS:-600}}
[ $# -ge 2 ] && shift 2 || shift $#
src=$(cd "$(dirname "$0")" && pwd)
all="shared http labels desc counter stat_args serve push"
targets=${*:-$all}
art="$build/fuzz-artifacts"
mkdir -p "$art"
# halt on the first UBSan report, as on an ASan one (both exit non-zero)
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
failed=""
ran=0
for t in $targets; do
	exe="$build/test/fuzz/fuzz-$t"
	if [ ! -x "$exe" ] && [ $# -eq 0 ]; then
		echo "fuzz-$t: not built, skipped"
		continue
	fi
	if [ ! -x "$exe" ]; then
		echo "fuzz-$t: not built (a build with -Dfuzzing=enabled?)" >&2
		failed="$failed $t"
		continue
	fi
	ran=$((ran + 1))
	work=$(mktemp -d)
	mkdir "$work/corpus"
	for d in corpus regressions; do
		[ -d "$src/$d/$t" ] && cp "$src/$d/$t"/* "$work/corpus/" 2>/dev/null
	done
	"$exe" -max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=2048 \
		-artifact_prefix="$art/$t-" "$work/corpus" >"$work/log" 2>&1
	rc=$?
	# the last status line (cov, ft, corp, exec/s) and the final stats
	last=$(grep -E '^#[0-9]+' "$work/log" | tail -n 1)
	echo "fuzz-$t: ${secs}s, exit $rc: $last"
	grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
		"$work/log" | sed "s/^/fuzz-$t: /"
	if [ $rc -ne 0 ]; then
		failed="$failed $t"
		tail -n 60 "$work/log"
	fi
	rm -rf "$work"
done
if [ "$ran" -eq 0 ]; then
	echo "fuzz: no target built in $build (a build with -Dfuzzing=enabled?)" >&2
	exit 1
fi
if [ -n "$failed" ]; then
	echo "fuzz: FAILED:$failed (inputs in $art)" >&2
	exit 1
fi
echo "fuzz: every target ran ${secs}s clean"
