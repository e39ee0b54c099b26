#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Redis 7.0.15 (Debian 12's source package) with used_memory as a percpu
# counter (percpu.patch). Called by adopters/run.sh:
#   adopt.sh build DIR        DIR/redis-server, patched, against percpu; the
#                             unpatched server is built too (work dir), for bench
#   adopt.sh check            Redis's own units (REDIS_UNITS) on the rseq path
#                             and under PCPU_FORCE_FALLBACK=1, then probe.py's
#                             exactness/bound and eviction checks
#   adopt.sh bench [THREADS...]  redis-benchmark, patched vs unpatched in
#                             alternating rounds (ADOPTERS_ROUNDS, default 5)
# Both servers are built the same way with Redis's own Makefile: Debian's
# allocator (system jemalloc, USE_SYSTEM_JEMALLOC=yes) when libjemalloc-dev
# is installed, else MALLOC=libc for both (said on stderr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"

work=$ADOPTERS_WORK/redis
src=$work/debian-src
jobs=$(nproc)
[ "$jobs" -le 4 ] || jobs=4

# What CI can afford on 2 cores (about 3 minutes for both paths): the units
# about memory accounting (memefficiency: used_memory per value; client-eviction
# and querybuf: client memory), maxmemory
# and eviction, INFO and lazy free. memefficiency's five "Active defrag"
# tests are skipped: they measure the allocator's fragmentation, not
# used_memory, and take 170 s here on their own (REDIS_SKIP= runs them).
REDIS_UNITS=${REDIS_UNITS:-unit/info unit/info-command unit/maxmemory unit/lazyfree unit/memefficiency unit/client-eviction unit/querybuf}
REDIS_SKIP=${REDIS_SKIP-/^Active defrag}

log() { echo "adopters/redis: $*" >&2; }

make_vars()
{
	if [ -f /usr/include/jemalloc/jemalloc.h ]; then
		echo USE_SYSTEM_JEMALLOC=yes
	else
		log "libjemalloc-dev missing: both servers built with MALLOC=libc (Debian uses jemalloc)"
		echo MALLOC=libc
	fi
}

# build_tree DIR PATCH|-: the Debian source, patched or not, built in DIR;
# rebuilt only when the patch or the make variables changed.
build_tree()
{
	local dir=$1 patch=$2 vars stamp

	vars=$(make_vars)
	stamp="$vars $( [ "$patch" = - ] && echo unpatched || sha256sum <"$patch")"
	if [ -x "$dir/src/redis-server" ] && [ "$(cat "$dir/.adopters-stamp" 2>/dev/null)" = "$stamp" ]; then
		return 0
	fi
	[ -d "$src" ] || adopt_source redis "$src"
	rm -rf "$dir"
	cp -a "$src" "$dir"
	[ "$patch" = - ] || patch -d "$dir" -p1 --quiet <"$patch"
	log "building $dir ($vars)"
	# shellcheck disable=SC2086
	make -C "$dir" -j"$jobs" $vars >"$dir.build.log" 2>&1 ||
		{ tail -n 30 "$dir.build.log" >&2; return 1; }
	echo "$stamp" >"$dir/.adopters-stamp"
}

build_both()
{
	adopt_percpu
	build_tree "$work/patched" "$here/percpu.patch"
	build_tree "$work/unpatched" -
}

cmd_build()
{
	local dest=$1

	build_both
	mkdir -p "$dest"
	cp "$work/patched/src/redis-server" "$dest/redis-server"
	ldd "$dest/redis-server" | grep -q libpercpu || { log "redis-server not linked to percpu"; return 1; }
	log "$dest/redis-server built against percpu ($(pkg-config --modversion percpu))"
}

# runtest_units DIR LOG: Redis's own runner on DIR's server, REDIS_UNITS
runtest_units()
{
	local dir=$1 out=$2 args=() u

	for u in $REDIS_UNITS; do
		args+=(--single "$u")
	done
	[ -z "$REDIS_SKIP" ] || args+=(--skiptest "$REDIS_SKIP")
	(cd "$dir" && ./runtest --clients 4 --timeout 600 "${args[@]}") >"$out" 2>&1
}

# plain LOG: the runner's output without its colours
plain() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }

# failed LOG: the names of the failed tests
failed() { plain "$1" | grep -a '^\[err\]' | sed 's/^\[err\]: //; s/ in tests\/.*//' | sort -u; }

# own_tests LABEL: REDIS_UNITS on the patched server; a failure passes only
# if the unpatched server fails the same test here
own_tests()
{
	local label=$1 out=$work/runtest-$1.log t0 failures base_failures

	t0=$(date +%s)
	if runtest_units "$work/patched" "$out"; then
		log "$label: $(plain "$out" | grep -ac '^\[ok\]') tests passed in $(( $(date +%s) - t0 )) s ($REDIS_UNITS)"
		return 0
	fi
	failures=$(failed "$out")
	[ -n "$failures" ] || { tail -n 30 "$out" >&2; log "$label: runtest failed"; return 1; }
	log "$label: failed on the patched server: $failures; running the unpatched server"
	runtest_units "$work/unpatched" "$work/runtest-$label-unpatched.log" || true
	base_failures=$(failed "$work/runtest-$label-unpatched.log")
	if [ -n "$(comm -23 <(echo "$failures") <(echo "$base_failures"))" ]; then
		log "$label: FAIL, only patched: $(comm -23 <(echo "$failures") <(echo "$base_failures"))"
		return 1
	fi
	log "$label: every failure also fails unpatched here (skipped): $failures"
}

port_free()
{
	local p=$1

	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		p=$((p + 1))
	done
	echo "$p"
}

# start_server BIN PORT ARGS...: a server in the background; pid in $server_pid
start_server()
{
	local bin=$1 port=$2 tries=0

	shift 2
	"$bin" --port "$port" --save '' --appendonly no --daemonize no --logfile '' \
		--dir "$work" --dbfilename "dump-$port.rdb" "$@" >"$work/server-$port.log" 2>&1 &
	server_pid=$!
	until redis-cli -p "$port" ping >/dev/null 2>&1; do
		tries=$((tries + 1))
		[ $tries -lt 100 ] || { cat "$work/server-$port.log" >&2; return 1; }
		sleep 0.05
	done
}

stop_server()
{
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# probe_pair WHAT ARGS: probe.py on the unpatched and the patched server
# (io-threads 2), then their comparison; fails if the patched server's probe
# or the comparison does
probe_pair()
{
	local what=$1 port pid rc=0 kind

	shift
	for kind in unpatched patched; do
		port=$(port_free 27100)
		start_server "$work/$kind/src/redis-server" "$port" --io-threads 2 --io-threads-do-reads yes
		pid=$server_pid
		python3 "$here/probe.py" "$port" "$what" "$@" >"$work/probe-$what-$kind.out" ||
			{ [ $kind = unpatched ] || rc=1; }
		stop_server "$pid"
		echo "  $kind: $(tr '\n' ' ' <"$work/probe-$what-$kind.out")" >&2
	done
	python3 "$here/probe.py" compare "$what" "$work/probe-$what-unpatched.out" \
		"$work/probe-$what-patched.out" | sed 's/^/  /' >&2 || rc=1
	return $rc
}

cmd_check()
{
	local rc=0 path

	build_both
	command -v tclsh >/dev/null || { log "tclsh missing (apt-get install tcl)"; return 1; }
	for path in rseq fallback; do
		if [ $path = fallback ]; then
			export PCPU_FORCE_FALLBACK=1
		else
			unset PCPU_FORCE_FALLBACK
		fi
		own_tests "$path" || rc=1
		log "$path: exactness and bound (the same load on both servers)"
		probe_pair exact || rc=1
		log "$path: first eviction under maxmemory 8 MB"
		probe_pair evict $((8 << 20)) || rc=1
	done
	unset PCPU_FORCE_FALLBACK
	[ $rc = 0 ] && log "check passed" || log "check FAILED"
	return $rc
}

# cpu_ticks PID: utime + stime in clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# bench_one KIND THREADS MIX: one redis-benchmark run; prints "ops/s ticks ops used_memory"
bench_one()
{
	local kind=$1 threads=$2 mix=$3 port pid t0 t1 csv ops=$bench_n extra=() tests

	port=$(port_free 27200)
	[ "$mix" != maxmemory ] || extra=(--maxmemory 32mb --maxmemory-policy allkeys-lru)
	start_server "$work/$kind/src/redis-server" "$port" --io-threads "$threads" \
		--io-threads-do-reads yes "${extra[@]}"
	pid=$server_pid
	case $mix in
	set) tests=set ;;
	lpush) tests=lpush ;;
	maxmemory) tests=set ;;
	esac
	t0=$(cpu_ticks "$pid")
	csv=$(redis-benchmark -p "$port" --threads "$threads" -c 50 -n "$ops" -d 1024 \
		-r 1000000 -t "$tests" --csv 2>/dev/null | tail -n 1)
	t1=$(cpu_ticks "$pid")
	echo "$(echo "$csv" | cut -d, -f2 | tr -d '"') $((t1 - t0)) $ops \
$(redis-cli -p "$port" info memory | awk -F: '/^used_memory:/ { print $2 + 0 }') \
$(redis-cli -p "$port" info stats | awk -F: '/^evicted_keys:/ { print $2 + 0 }')"
	stop_server "$pid"
}

# rounds_of "V V ...": the rounds' values, whole numbers, in the order run
rounds_of() { tr ' ' '\n' <<<"$1" | grep . | awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), $1 }'; }

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

cmd_bench()
{
	local threads=("$@") rounds=${ADOPTERS_ROUNDS:-5} hz t mix r kind line
	local -A tput cpu mem

	[ ${#threads[@]} -gt 0 ] || threads=(1 2)
	bench_n=${ADOPTERS_BENCH_OPS:-100000}
	# short runs must still pass maxmemory (32 MB is about 24,000 SETs of 1 KB)
	[ "$rounds" -ge 5 ] || bench_n=${ADOPTERS_BENCH_OPS:-40000}
	build_both
	hz=$(getconf CLK_TCK)
	log "bench: $rounds rounds of $bench_n ops per run, threads ${threads[*]}"
	for t in "${threads[@]}"; do
		for mix in set lpush maxmemory; do
			for r in $(seq "$rounds"); do
				# alternate which server goes first
				for kind in $( [ $((r % 2)) = 1 ] && echo unpatched patched || echo patched unpatched); do
					line=$(bench_one "$kind" "$t" "$mix")
					read -r ops_s ticks ops used evicted <<<"$line"
					tput[$kind.$t.$mix]+="$ops_s "
					cpu[$kind.$t.$mix]+="$(awk -v t="$ticks" -v h="$hz" -v n="$ops" 'BEGIN { printf "%.3f", t / h / n * 1e6 }') "
					mem[$kind.$t.$mix]="$used/$evicted"
				done
			done
		done
	done
	echo
	echo "Redis 7.0.15 (Debian 12 source, $(make_vars)), used_memory as a percpu counter vs unpatched;"
	echo "redis-benchmark -c 50 -d 1024 -r 1000000, $bench_n ops per run, median of $rounds alternating rounds."
	echo "CPU: $(adopt_cpu)"
	echo
	echo "| io-threads/--threads | load | unpatched ops/s | patched ops/s | change | unpatched CPU µs/op | patched CPU µs/op | ops/s per round (unpatched; patched) | used_memory after (unpatched / patched), evicted keys |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for t in "${threads[@]}"; do
		for mix in set lpush maxmemory; do
			local ub pb uc pc
			ub=$(tr ' ' '\n' <<<"${tput[unpatched.$t.$mix]}" | grep . | median)
			pb=$(tr ' ' '\n' <<<"${tput[patched.$t.$mix]}" | grep . | median)
			uc=$(tr ' ' '\n' <<<"${cpu[unpatched.$t.$mix]}" | grep . | median)
			pc=$(tr ' ' '\n' <<<"${cpu[patched.$t.$mix]}" | grep . | median)
			printf '| %s | %s | %s | %s | %+.1f %% | %s | %s | %s; %s | %s / %s |\n' "$t" \
				"$( [ $mix = maxmemory ] && echo 'SET 1 KB, maxmemory 32 MB (evicting)' || echo "$( [ $mix = set ] && echo 'SET 1 KB' || echo 'LPUSH 1 KB')")" \
				"$ub" "$pb" "$(awk -v a="$ub" -v b="$pb" 'BEGIN { print (b - a) / a * 100 }')" \
				"$uc" "$pc" "$(rounds_of "${tput[unpatched.$t.$mix]}")" \
				"$(rounds_of "${tput[patched.$t.$mix]}")" \
				"${mem[unpatched.$t.$mix]}" "${mem[patched.$t.$mix]}"
		done
	done
	echo
	echo "On $(nproc) cores, with the benchmark client on the same cores, contention on used_memory barely shows."
	echo
	log "first eviction, same key sequence on both servers (maxmemory 8 MB):"
	probe_pair evict $((8 << 20))
}

case ${1:-} in
build) cmd_build "$2" ;;
check) cmd_check ;;
bench) shift; cmd_bench "$@" ;;
*) echo "usage: $0 check | bench [THREADS...] | build DIR" >&2; exit 2 ;;
esac
