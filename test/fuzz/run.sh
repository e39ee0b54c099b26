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
# a TARGET named and not built fails. FUZZ_JOBS (default 1) targets run at
# once, each for SECONDS: on N idle CPUs, FUZZ_JOBS=N gives each target the
# same CPU time in 1/N of the wall time. Each target's report is printed
# once it ends, in order.
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
jobs=${FUZZ_JOBS:-1}
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT

# Fuzzes target $1 (built at $2) on a copy of its corpus: its report in
# $reports/$1.txt, its exit status in $reports/$1.rc.
fuzz_one()
{
	work=$(mktemp -d)
	mkdir "$work/corpus"
	for d in corpus regressions; do
		[ -d "$src/$d/$1" ] && cp "$src/$d/$1"/* "$work/corpus/" 2>/dev/null
	done
	"$2" -max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=2048 \
		-artifact_prefix="$art/$1-" "$work/corpus" >"$work/log" 2>&1
	rc=$?
	{
		# the last status line (cov, ft, corp, exec/s) and the final stats
		echo "fuzz-$1: ${secs}s, exit $rc: $(grep -E '^#[0-9]+' "$work/log" | tail -n 1)"
		grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
			"$work/log" | sed "s/^/fuzz-$1: /"
		[ $rc -ne 0 ] && tail -n 60 "$work/log"
	} >"$reports/$1.txt"
	echo $rc >"$reports/$1.rc"
	rm -rf "$work"
}

# Prints the reports of the targets $batch ran, in order; notes failures.
report_batch()
{
	for b in $batch; do
		cat "$reports/$b.txt"
		[ "$(cat "$reports/$b.rc")" -ne 0 ] && failed="$failed $b"
	done
	batch=""
}

failed=""
ran=0
batch=""
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
	fuzz_one "$t" "$exe" &
	batch="$batch $t"
	if [ $(echo $batch | wc -w) -ge "$jobs" ]; then
		wait
		report_batch
	fi
done
wait
report_batch
if [ "$ran" -eq 0 ]; then
	echo "fuzz: no target built in $build (a build with -Dfuzzing=enabled?)" >&2
	exit 1
fi
if [ -n "$failed" ]; then
	echo "fuzz: FAILED:$failed (inputs in $art)" >&2
	exit 1
fi
echo "fuzz: every target ran ${secs}s clean"
