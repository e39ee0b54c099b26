#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Issue 35's tables for the host it runs on, in one command: the add against
# both bare adds, the shapes of the sequence in asm alone, the folding sync
# at 1024/1024 against the kernel port beside walks of loads, swaps and
# stores alone (bench/shapes/fold-walk.c), and the check against the last
# release. Prints a section of bench/RESULTS.md
# (Markdown, the CPU named) on stdout; keeps every raw output in OUT.
#
#   bench/host-tables.sh BUILD [OUT]
#   bench/host-tables.sh --report OUT   (the tables again, from OUT's outputs)
#
# BUILD: a release build (meson setup BUILD --buildtype release; ninja -C
# BUILD). OUT: where the raw outputs go (default: a new directory under
# /tmp). Run it on a quiet machine: it takes about 3 minutes on 2 CPUs.
# RUNS (default 6) sets how many runs of the add and SERIES (default 3) how
# many of the scale model; ROUNDS1 / ROUNDS2 (9 / 3) the interleaved rounds
# of the shapes at 1 and 2 threads. The shapes and the fold walk are x86-64
# asm: elsewhere their tables are left out.
set -eu

usage="usage: bench/host-tables.sh BUILD [OUT] | --report OUT"
runs=${RUNS:-6} series=${SERIES:-3} rounds1=${ROUNDS1:-9} rounds2=${ROUNDS2:-3}
src=$(cd "$(dirname "$0")" && pwd)
say() { echo "host-tables: $*" >&2; }
x86=false
[ "$(uname -m)" = x86_64 ] && x86=true

report_only=false
if [ "${1:-}" = --report ]; then
	report_only=true out=${2:?$usage}
	runs=$(ls "$out"/add.*.txt | wc -l) series=$(ls "$out"/scale.*.txt | wc -l)
	# the outputs say which tables there are, not this machine
	x86=false
	[ -f "$out/shapes-1.txt" ] && x86=true
else
	build=${1:?$usage}
	out=${2:-$(mktemp -d /tmp/host-tables.XXXXXX)}
	bench=$build/bench/percpu-bench scale=$build/bench/scale/percpu-bench-scale
	for exe in "$bench" "$scale"; do
		[ -x "$exe" ] || { say "no $exe: build BUILD first"; exit 2; }
	done
	mkdir -p "$out"
fi

# The median of the numbers on stdin, one per line.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The median of column C of the table rows in FILE (a ratio's x dropped),
# printed with FORMAT.
column_median() { printf "$3" "$(awk -F'|' -v c="$2" '{ gsub(/[ x]/, "", $c); print $c }' "$1" | median)"; }

# The time of walk NAME in fold-walk.c's output FILE.
walk_ns() { awk -v name="$2" '{ w = $0; sub(/ +[0-9]+ ns per walk.*/, "", w) } w == name { print $(NF - 6) }' "$1"; }

# The Nth bracketed figure ([per CPU time]) of the line of FILE that holds TEXT.
bracket() { grep -F -- "$2" "$1" | head -n 1 | grep -o '\[[0-9.]*\]' | sed -n "$3p" | tr -d '[]'; }

# Runs every benchmark; its outputs go to $out.
measure()
{
	say "the add, $runs runs"
	for i in $(seq "$runs"); do
		"$bench" --add-only --runs 9 --duration-ms 200 > "$out/add.$i.txt" 2>&1
	done
	if $x86; then
		say "the shapes, $rounds1 rounds at 1 thread and $rounds2 at 2"
		cc -O2 -pthread "$src/shapes/add-shapes.c" -o "$out/shapes"
		cc -O2 "$src/shapes/fold-walk.c" -o "$out/fold-walk"
		for t in 1 2; do
			rounds=$rounds1
			[ "$t" = 2 ] && rounds=$rounds2
			for r in $(seq "$rounds"); do
				for v in 0 1 2 3 4 5 6 7 8; do
					echo "$r $v $("$out/shapes" "$v" "$t" 0.2)"
				done
			done > "$out/shapes-$t.txt"
		done
	fi
	say "the folding sync, $series series"
	for i in $(seq "$series"); do
		"$scale" --cpus 1024,1024/4 --runs 5 > "$out/scale.$i.txt" 2>&1
		if $x86; then "$out/fold-walk" > "$out/fold-walk.$i.txt" 2>&1; fi
	done
	say "the check against 0.4"
	rc=0
	"$bench" --add-only --quick --min-vs-0.4 0.9 > "$out/add-vs-0.4.txt" 2>&1 || rc=$?
	echo "exit status $rc" >> "$out/add-vs-0.4.txt"
	{
		uname -r
		getconf GNU_LIBC_VERSION 2>/dev/null || echo "libc unknown"
		cc --version | head -n 1
		git -C "$src/.." rev-parse --short HEAD 2>/dev/null || echo unknown
		nproc
		date -u +%Y-%m-%d
		cut -d ' ' -f 1-3 /proc/loadavg
	} > "$out/host.txt"
}
$report_only || measure
# Line N of host.txt: kernel, libc, compiler, commit, CPUs, date, load.
host() { sed -n "$1p" "$out/host.txt"; }

cpu=$(sed -n 's/^CPU: //p' "$out/add.1.txt" | head -n 1)
echo "## The add and the folding sync on $cpu"
echo
echo "CPU: \`$cpu\`, $(host 5) CPUs online, Linux $(host 1), $(host 2), $(host 3);"
echo "the tree at $(host 4), \`bench/host-tables.sh\` on $(host 6), load average"
echo "$(host 7) at the end. Raw outputs: \`$out\`."
echo
echo "### The add against both bare adds (\`percpu-bench --add-only --runs 9 --duration-ms 200\`, $runs runs)"
echo
echo "Per thread CPU time; the ratios are each run's paired ratio, and their median:"
echo
echo "| run | add / librseq's bare add, 1 thread | 2 threads | add / 0.4's add, 1 thread | 2 threads |"
echo "|--:|--:|--:|--:|--:|"
for i in $(seq "$runs"); do
	f=$out/add.$i.txt
	echo "| $i | $(bracket "$f" "bare add, librseq's idiom" 1) | $(bracket "$f" "bare add, librseq's idiom" 2) | $(bracket "$f" "percpu / 0.4" 1) | $(bracket "$f" "percpu / 0.4" 2) |"
done > "$out/add.rows"
cat "$out/add.rows"
col() { column_median "$out/add.rows" "$1" %.2f; }
echo "| **median** | **$(col 3)x** | **$(col 4)x** | $(col 5)x | $(col 6)x |"
echo
echo "Targets (issue 35): >= 0.7x librseq's bare add at 1 and 2 threads, >= 0.8x where the"
echo "sequence allows (the shapes below say whether it does)."

if $x86; then
	echo
	echo "### The shapes of the sequence, asm alone (\`bench/shapes/add-shapes.c\`)"
	echo
	echo "Interleaved rounds of every shape; Mops/s per thread CPU time, medians; the ratio the"
	echo "median of each round's ratio to A (shapes: the comments of \`add-shapes.c\`):"
	echo
	echo "| shape | 1 thread | / A | 2 threads | / A |"
	echo "|---|--:|--:|--:|--:|"
	for v in 0 1 7 2 6 3 4 5 8; do
		case $v in
		0) name="A: librseq's bare add (CPU loaded before, compared inside)" ;;
		1) name="B: the library's bare shape of 0.4 (CPU loaded inside, base + index)" ;;
		7) name="H: B through one register (0.5's bare add)" ;;
		2) name="C: the library's checked shape of 0.4 (base + index)" ;;
		6) name="G: C with the CPU number loaded before, compared inside" ;;
		3) name="D: checked, librseq's shape: CPU and address before, check then add" ;;
		4) name="E: add first, check after the commit" ;;
		5) name="F: checked in registers, committed by a plain store" ;;
		8) name="I: C through one register (0.5's checked add)" ;;
		esac
		row="| $name"
		for t in 1 2; do
			f=$out/shapes-$t.txt
			rate=$(awk -v v="$v" '$2 == v { print $4 }' "$f" | median)
			ratio=$(awk -v v="$v" '$2 == 0 { a[$1] = $4 } $2 == v { r[$1] = $4 }
				END { for (k in r) if (a[k] > 0) printf "%.3f\n", r[k] / a[k] }' "$f" | median)
			row="$row | $(printf %.0f "$rate") | $(printf %.2f "$ratio")"
		done
		echo "$row |"
	done
fi

echo
echo "### The folding sync at 1024/1024 against the kernel port (\`percpu-bench-scale --cpus 1024,1024/4 --runs 5\`, $series series)"
echo
# A row of the kernel table: the N/online row's cell under header NAME.
cell() {
	awk -F'|' -v n="$2" -v name="$3" '
		/kp_sync_fold/ { for (i = 1; i <= NF; i++) { h = $i; gsub(/^ +| +$/, "", h); idx[h] = i } on = 1; next }
		on && $2 + 0 == 1024 && $3 + 0 == n { v = $idx[name]; gsub(/ /, "", v); print v; exit }' "$1"
}
if $x86; then
	echo "| series | percpu (ns) | kernel port (ns) | ratio | at 1024/4: percpu (ns) | plain loads of 1,024 pairs (ns) | one \`lock cmpxchg16b\` per pair (ns) | a plain store of each mark (ns) | colored: one \`lock cmpxchg16b\` per pair (ns) |"
	echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
else
	echo "| series | percpu (ns) | kernel port (ns) | ratio | at 1024/4: percpu (ns) |"
	echo "|--:|--:|--:|--:|--:|"
fi
for i in $(seq "$series"); do
	f=$out/scale.$i.txt
	p=$(cell "$f" 1024 "sync_fold (ns)") k=$(cell "$f" 1024 "kp_sync_fold (ns)")
	row="| $i | $p | $k | $(awk -v p="$p" -v k="$k" 'BEGIN { printf "%.2f", p / k }')x | $(cell "$f" 4 "sync_fold (ns)")"
	if $x86; then
		w=$out/fold-walk.$i.txt
		row="$row | $(walk_ns "$w" "plain loads") | $(walk_ns "$w" "cas16 per slot") | $(walk_ns "$w" "plain loads, plain mark store") | $(walk_ns "$w" "colored: cas16 per slot")"
	fi
	echo "$row |"
done > "$out/sync.rows"
cat "$out/sync.rows"
col_sync() { column_median "$out/sync.rows" "$1" %.0f; }
echo "| **median** | $(col_sync 3) | $(col_sync 4) | **$(column_median "$out/sync.rows" 5 %.2f)x** | $(col_sync 6) |$($x86 && echo " $(col_sync 7) | $(col_sync 8) | $(col_sync 9) | $(col_sync 10) |")"
echo
echo "Targets (issue 35): <= 1.2x the kernel port, never above 1.5x. percpu folds each armed CPU"
echo "with one locked swap; the kernel port reads every slot and makes one add. The last four"
echo "columns are walks of 1,024 pairs a 4 KiB stride apart with nothing else"
echo "(\`bench/shapes/fold-walk.c\`): loads; a locked swap of each; a plain store of each mark"
echo "(what a fold would write if folders took one lock for the walk); and the swaps again with"
echo "each pair at another cache line of its page (colored), where the 4 KiB stride puts every"
echo "CPU's copy in one set of an L1 indexed by the page offset."
echo
echo "### The check against the last release (\`meson test --benchmark add-vs-0.4\`'s command)"
echo
echo "\`$(tail -n 2 "$out/add-vs-0.4.txt" | head -n 1)\` ($(tail -n 1 "$out/add-vs-0.4.txt"))"
