#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcached 1.6.18 (Debian 12's source) on percpu: percpu.patch makes its hot
# global counters percpu counters and its thread and slab-class statistics
# stat sets. Called by adopters/run.sh:
#
#   adopt.sh build DIR          DIR/memcached-server, patched, built against percpu
#   adopt.sh check              memcached's own `make test` on the patched daemon,
#                               on the rseq path and under PCPU_FORCE_FALLBACK=1,
#                               then exact.py (statistics against known counts),
#                               on both paths; exit 0 only if all pass
#   adopt.sh bench [THREADS...] memcaslap's set-heavy and get-heavy mixes at each
#                               worker thread count (default 1 2 4), unpatched and
#                               patched in alternating rounds; a markdown table
#
# Environment: ADOPTERS_WORK (common.sh); ADOPTERS_ROUNDS (bench rounds, 5),
# ADOPTERS_SECONDS (seconds a bench run lasts, 5), ADOPTERS_CLIENT_THREADS
# (memcaslap threads, 2), ADOPTERS_CONCURRENCY (memcaslap connections, 32);
# ADOPTERS_TEST_JOBS (prove -j for make test, 16: the tests mostly sleep).
# Needs: autoconf automake pkg-config libevent-dev dpkg-dev, perl with
# libio-socket-ssl-perl (t/), python3, libmemcached-tools (memcaslap).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
. "$here/../common.sh"

work=$ADOPTERS_WORK/memcached
src=$work/src
base=$work/unpatched
patched=$work/patched
jobs=$(nproc)
mkdir -p "$work"

log() { printf 'memcached: %s\n' "$*" >&2; }

# The pristine source, unpacked once.
fetch()
{
	if [ ! -f "$src/.adopters-complete" ]; then
		adopt_source memcached "$src"
		touch "$src/.adopters-complete"
	fi
}

# The unpatched daemon (bench's baseline; check's witness when a test fails).
build_unpatched()
{
	fetch
	if [ ! -x "$base/timedrun" ]; then
		log "building the unpatched daemon in $base"
		rm -rf "$base"
		cp -a "$src" "$base"
		(cd "$base" && ./configure -q --disable-coverage &&
			make -s -j"$jobs") >&2
	fi
}

# The patched daemon, rebuilt whenever the patch or percpu changed.
build_patched()
{
	local stamp

	fetch
	adopt_percpu
	# the patch, and percpu's headers and library by content (an install renews their times)
	stamp=$( (cat "$here/percpu.patch"; pkg-config --modversion --cflags --libs percpu;
		cat "$(pkg-config --variable=includedir percpu)"/percpu/*.h \
			"$(pkg-config --variable=libdir percpu)"/libpercpu.so) | md5sum | cut -d' ' -f1)
	if [ "$(cat "$patched/.adopters-stamp" 2>/dev/null)" != "$stamp" ]; then
		log "patching and building in $patched against percpu $(pkg-config --modversion percpu)"
		rm -rf "$patched"
		cp -a "$src" "$patched"
		(cd "$patched" && patch -p1 -s <"$here/percpu.patch" && autoreconf -fi &&
			./configure -q --disable-coverage &&
			make -s -j"$jobs") >&2
		echo "$stamp" >"$patched/.adopters-stamp"
	fi
}

cmd_build()
{
	local dir=$1

	build_patched
	mkdir -p "$dir"
	cp "$patched/memcached" "$dir/memcached-server"
	log "$dir/memcached-server: $("$dir/memcached-server" -V) with percpu $(pkg-config --modversion percpu)"
	if [ -n "${LD_LIBRARY_PATH:-}" ]; then
		log "run it with LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
	fi
}

# memcached's own tests, what its `make test` runs (./sizes, ./testapp, then
# prove over t/), in the patched tree, with the environment given ("" or
# PCPU_FORCE_FALLBACK=1): sizes and testapp here, prove in the background
# (the two paths' suites overlap: they mostly sleep). A t/ file that fails
# is run again on the unpatched daemon: failing there too, it is reported and
# skipped; failing only patched, it fails the check. One that fails while the
# two suites run together is first run again alone: some t/ files time the
# daemon's background threads (t/extstore-buckets.t counts page reclaims
# after fixed sleeps) and lose under load.
own_tests_start()
{
	local label=$1
	shift

	log "make test's ./sizes, ./testapp ($label) ..."
	if ! (cd "$patched" && env "$@" ./sizes && env "$@" ./testapp) >"$work/testapp-$label.log" 2>&1; then
		log "FAIL [$label] testapp:"
		tail -n 30 "$work/testapp-$label.log" >&2
		return 1
	fi
	log "make test's prove t/ ($label) in the background ..."
	(cd "$patched" && env "$@" prove -j "${ADOPTERS_TEST_JOBS:-16}" t) >"$work/prove-$label.log" 2>&1 &
	prove_pids+=($!)
}

own_tests_finish()
{
	local label=$1 pid=$2 logf=$work/prove-$1.log failed t rc=0
	shift 2

	if wait "$pid"; then
		grep -E '^(All tests successful|Files=|Result:)' "$logf" | sed "s/^/  [$label] /" >&2
		return 0
	fi
	failed=$(grep -oE '^t/[A-Za-z0-9_.-]+\.t' "$logf" | sort -u | while read -r t; do
		grep -qE "^$t +\.+ ok" "$logf" || grep -qE "^$t +\.+ skipped" "$logf" || echo "$t"; done)
	if [ -z "$failed" ]; then
		log "FAIL [$label] prove failed without a failing t/ file:"
		tail -n 30 "$logf" >&2
		return 1
	fi
	build_unpatched
	for t in $failed; do
		# some t/ files time background threads: once more, alone
		if (cd "$patched" && env "$@" prove "$t") >"$work/retry-$label-$(basename "$t").log" 2>&1; then
			log "RETRY [$label] $t failed beside the other suite and passed alone:"
			grep -B2 -A8 -E '^#   Failed' "$logf" | head -n 20 | sed 's/^/    /' >&2
			continue
		fi
		if (cd "$base" && env "$@" prove "$t") >"$work/unpatched-$label-$(basename "$t").log" 2>&1; then
			log "FAIL [$label] $t: fails patched, passes unpatched"
			grep -A20 -E "^$t" "$logf" | head -n 40 >&2
			rc=1
		else
			log "SKIP [$label] $t: fails on the unpatched daemon too:"
			tail -n 15 "$work/unpatched-$label-$(basename "$t").log" | sed 's/^/    /' >&2
		fi
	done
	return $rc
}

cmd_check()
{
	local rc=0 prove_pids=()

	command -v prove >/dev/null || { log "prove (perl) missing"; exit 1; }
	build_patched
	own_tests_start rseq || rc=1
	own_tests_start fallback PCPU_FORCE_FALLBACK=1 || rc=1
	log "exact.py (rseq) ..."
	/usr/bin/python3 "$here/exact.py" "$patched/memcached" 8 4 >"$work/exact-rseq.log" 2>&1 || rc=1
	grep -E '^(FAIL|#)' "$work/exact-rseq.log" | sed 's/^/  [rseq] /' >&2
	log "exact.py (fallback) ..."
	PCPU_FORCE_FALLBACK=1 /usr/bin/python3 "$here/exact.py" "$patched/memcached" 8 4 \
		>"$work/exact-fallback.log" 2>&1 || rc=1
	grep -E '^(FAIL|#)' "$work/exact-fallback.log" | sed 's/^/  [fallback] /' >&2
	if [ ${#prove_pids[@]} -eq 2 ]; then
		own_tests_finish rseq "${prove_pids[0]}" || rc=1
		own_tests_finish fallback "${prove_pids[1]}" PCPU_FORCE_FALLBACK=1 || rc=1
	else
		wait "${prove_pids[@]}" 2>/dev/null || true
		rc=1
	fi
	if [ $rc -eq 0 ]; then
		log "check: PASS (memcached's own tests and exact.py, on the rseq and fallback paths)"
	else
		log "check: FAIL (logs in $work)"
	fi
	return $rc
}

# One bench run: prints "OPS CPU_TICKS" for BINARY at -t THREADS with memcaslap config CFG.
bench_run()
{
	local binary=$1 threads=$2 cfg=$3 port pid before after out ops

	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$binary" -p "$port" -U 0 -l 127.0.0.1 -t "$threads" -m 1024 -c 4096 -u "$(id -un)" &
	pid=$!
	for _ in $(seq 50); do
		/usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" \
			2>/dev/null && break
		sleep 0.1
	done
	before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	out=$(memcaslap -s "127.0.0.1:$port" -T "${ADOPTERS_CLIENT_THREADS:-2}" \
		-c "${ADOPTERS_CONCURRENCY:-32}" -t "${ADOPTERS_SECONDS:-5}s" -F "$cfg" 2>&1)
	after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	ops=$(sed -n 's/.*Ops: \([0-9]*\) TPS.*/\1/p' <<<"$out" | tail -n 1)
	[ -n "$ops" ] || { log "memcaslap gave no result: $out"; exit 1; }
	echo "$ops $((after - before))"
}

median()
{
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

cmd_bench()
{
	local threads=("$@") rounds=${ADOPTERS_ROUNDS:-5} secs=${ADOPTERS_SECONDS:-5}
	local hz mix t r which res cfg ops ticks
	declare -A tps cpu

	[ ${#threads[@]} -gt 0 ] || threads=(1 2 4)
	command -v memcaslap >/dev/null || { log "memcaslap missing (apt-get install libmemcached-tools)"; exit 1; }
	build_unpatched
	build_patched
	hz=$(getconf CLK_TCK)
	for mix in set get; do
		cfg=$work/memcaslap-$mix.cfg
		# keys of 32 bytes, values of 256; 90 % sets or 90 % gets
		if [ $mix = set ]; then
			printf 'key\n32 32 1\nvalue\n256 256 1\ncmd\n0 0.9\n1 0.1\n' >"$cfg"
		else
			printf 'key\n32 32 1\nvalue\n256 256 1\ncmd\n0 0.1\n1 0.9\n' >"$cfg"
		fi
		for t in "${threads[@]}"; do
			for r in $(seq "$rounds"); do
				# alternate which daemon goes first
				for which in $( ((r % 2)) && echo "unpatched patched" || echo "patched unpatched"); do
					if [ $which = unpatched ]; then
						res=$(bench_run "$base/memcached" "$t" "$cfg")
					else
						res=$(bench_run "$patched/memcached" "$t" "$cfg")
					fi
					read -r ops ticks <<<"$res"
					tps[$mix,$t,$which]+="$(awk -v o="$ops" -v s="$secs" 'BEGIN { print o / s }') "
					cpu[$mix,$t,$which]+="$(awk -v o="$ops" -v k="$ticks" -v hz="$hz" 'BEGIN { print k / hz * 1e6 / o }') "
					log "$mix -t $t round $r $which: $ops ops, $ticks ticks"
				done
			done
		done
	done
	echo
	echo "memcached 1.6.18 (Debian 12), unpatched vs patched (percpu $(pkg-config --modversion percpu)),"
	echo "memcaslap -T ${ADOPTERS_CLIENT_THREADS:-2} -c ${ADOPTERS_CONCURRENCY:-32}, keys 32 B, values 256 B,"
	echo "${secs} s a run, median of $rounds alternating rounds; CPU: $(adopt_cpu)"
	echo
	echo "| mix | -t | unpatched kops/s | patched kops/s | ratio | unpatched CPU µs/op | patched CPU µs/op | ratio |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|"
	for mix in set get; do
		for t in "${threads[@]}"; do
			local tu tp cu cp
			tu=$(tr ' ' '\n' <<<"${tps[$mix,$t,unpatched]}" | grep . | median)
			tp=$(tr ' ' '\n' <<<"${tps[$mix,$t,patched]}" | grep . | median)
			cu=$(tr ' ' '\n' <<<"${cpu[$mix,$t,unpatched]}" | grep . | median)
			cp=$(tr ' ' '\n' <<<"${cpu[$mix,$t,patched]}" | grep . | median)
			awk -v m="$mix-heavy (90 %)" -v t="$t" -v tu="$tu" -v tp="$tp" -v cu="$cu" -v cp="$cp" 'BEGIN {
				printf "| %s | %d | %.1f | %.1f | %.3f | %.2f | %.2f | %.3f |\n",
					m, t, tu / 1000, tp / 1000, tp / tu, cu, cp, cp / cu }'
		done
	done
	echo
	echo "The client runs on the same CPUs as the daemon. On $(nproc) CPUs the locks the patch"
	echo "removes are barely contended: run it with more worker threads on a bigger machine."
}

[ $# -ge 1 ] || { echo "usage: $0 check | bench [THREADS...] | build DIR" >&2; exit 2; }
what=$1
shift
case "$what" in
check) cmd_check ;;
bench) cmd_bench "$@" ;;
build) [ $# -eq 1 ] || { echo "usage: $0 build DIR" >&2; exit 2; }; cmd_build "$1" ;;
*) echo "usage: $0 check | bench [THREADS...] | build DIR" >&2; exit 2 ;;
esac
