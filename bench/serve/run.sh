#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Two scrapers at once against the built-in /metrics server (issue 33):
# two load clients (load.c, one keep-alive connection each) scrape for 5 s
# a server (serve.c) whose collector emits 5000 gauges, then one whose
# collector sleeps 20 ms (a collector waiting on I/O) and emits 100, then
# one with 5000 registered counters (walked under the metrics lock).
# Prints each client's scrapes/s and p50/p99 latency, and the server's CPU
# time, for each build given (e.g. 0.4's and this one's), alternating.
#
#   bench/serve/run.sh BUILDDIR...      (each a meson build of percpu)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
first=$1
builds="$*" # paths without spaces
cc -O2 -I"$here/../../include" "$here/serve.c" -o "$tmp/serve" \
	-L"$first/metrics" -L"$first/lib" -lpercpu-metrics -lpercpu -pthread
cc -O2 "$here/load.c" -o "$tmp/load" -pthread
grep -m1 'model name' /proc/cpuinfo
echo "family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2) model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
port=19350
for rep in 1 2; do
	for build in $builds; do
		for scenario in "5000 0 0" "100 20 0" "0 0 5000"; do
			set -f; set -- $scenario; nr=$1 sleep_ms=$2 reg=$3
			port=$((port + 1))
			echo "== $build: $nr gauges, collector sleeps $sleep_ms ms, $reg registered counters"
			LD_LIBRARY_PATH="$build/metrics:$build/lib" "$tmp/serve" $port 7 $nr $sleep_ms $reg &
			pid=$!
			sleep 0.5
			"$tmp/load" $port 5 2
			wait $pid
		done
	done
done
