#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Counts the instructions of pcpu_counter_add()'s fast path at a real call
# site: bench_add_one() in percpu-bench (bench/fastpath.c), a noinline
# function whose whole body is pcpu_counter_add(c, 1).
#
# usage: fastpath-insns.sh [path/to/percpu-bench]
#
# How the path is found: objdump disassembles bench_add_one; starting at its
# entry, the walk follows the code as the CPU runs it in the common case:
#   - a conditional branch (jcc) is taken to be NOT taken: the fast path's
#     tests are all wrapped in pcpu_likely()/pcpu_unlikely(), and gcc lays
#     out the expected side as the fall-through; the branches then lead to
#     the slow paths (NULL counter, atomic fallback mode, no rseq, fold);
#   - an unconditional jmp inside the function is followed;
#   - a jmp out of the function is a tail call into the library (a slow
#     path): the walk stops and says so, as it does at ret.
# The walked path is printed, so that a reader can check each not-taken
# branch. The rseq abort handler lives in section __rseq_failure and is
# not part of the function.
#
# Reports: the instructions in the function (and in a .cold part, if gcc
# split one off), alignment padding not counted, and the instructions on
# the fast path, entry to ret.
set -eu

exe=${1:-percpu-bench}
fn=bench_add_one

if ! command -v objdump >/dev/null 2>&1; then
	echo "fastpath-insns: objdump not found" >&2
	exit 77
fi
if [ ! -f "$exe" ]; then
	echo "fastpath-insns: $exe: no such file" >&2
	exit 1
fi

disasm() {
	objdump -d --no-show-raw-insn --disassemble="$1" "$exe" |
		awk -v fn="$1" '
			$0 ~ "^[0-9a-f]+ <" fn ">:$" { inside = 1; next }
			inside && /^$/ { exit }
			inside && /^ *[0-9a-f]+:/ { print }'
}

body=$(disasm "$fn")
if [ -z "$body" ]; then
	echo "fastpath-insns: no function $fn in $exe" >&2
	exit 1
fi
# alignment padding (nop, nopw, xchg %ax,%ax, ...) is not counted
count_insns() {
	grep -v -E ':[[:space:]]+((data16|cs)[[:space:]]+)*(nop|xchg[[:space:]]+%ax,%ax)' | grep -c . || true
}
total=$(printf '%s\n' "$body" | count_insns)
cold=$(disasm "$fn.cold" | count_insns)

printf '%s\n' "$body" | awk -v total="$total" -v cold="$cold" -v fn="$fn" '
	{
		addr = $1; sub(":", "", addr)
		line = $0; sub(/^ *[0-9a-f]+:[ \t]*/, "", line)
		mnem[addr] = $2
		text[addr] = line
		order[n++] = addr
	}
	END {
		for (i = 0; i < n - 1; i++)
			next_of[order[i]] = order[i + 1]
		pc = order[0]; count = 0; end = "fell off the end"
		while (pc != "" && count < 200) {
			count++
			printf "  %6s:  %s\n", pc, text[pc]
			m = mnem[pc]
			if (m ~ /^ret/) { end = "ret"; break }
			if (m ~ /^jmp/) {
				target = text[pc]; sub(/^[a-z]+[ \t]+/, "", target)
				sub(/[ \t].*/, "", target)
				if (target in mnem) { pc = target; continue }
				end = "tail call out of the function: " text[pc]
				break
			}
			pc = next_of[pc]
		}
		printf "%s: %d instructions in the function", fn, total
		if (cold > 0)
			printf " (+%d in %s.cold)", cold, fn
		printf "\n"
		printf "fast path, entry to %s, conditional branches not taken: %d instructions\n",
			end, count
	}'
