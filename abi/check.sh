#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The ABI of both libraries against the dumps of the last release
# (abi/*.abi, abidw's XML), with libabigail's abidiff: fails on any change
# that breaks a program linked against that release (a removed or changed
# function, variable or type), and reports additions without failing.
#
#   abi/check.sh BUILDDIR            compare BUILDDIR's libraries with abi/
#   abi/check.sh --update BUILDDIR   write abi/ from BUILDDIR (a release
#                                    step, RELEASING.md; never to silence
#                                    a failure)
#
# abi/suppressions.abignore names the changes that break no program (each
# with its reason): members appended to a struct that only the library
# allocates.
#
# BUILDDIR must carry debug information (meson's default debugoptimized
# build does; a release build does not).
set -eu

update=0
if [ "${1:-}" = --update ]; then
	update=1
	shift
fi
build=${1:?usage: abi/check.sh [--update] BUILDDIR}
here=$(cd "$(dirname "$0")" && pwd)
include=$(cd "$here/../include" && pwd)
rc=0

for lib in lib/libpercpu.so.2 metrics/libpercpu-metrics.so.2; do
	so=$build/$lib
	dump=$here/$(basename "$lib").abi
	[ -f "$so" ] || { echo "abi: $so not built" >&2; exit 2; }
	if [ $update = 1 ]; then
		abidw --no-corpus-path --no-comp-dir-path --headers-dir "$include/percpu" \
			--drop-private-types --out-file "$dump" "$so"
		echo "abi: wrote $dump"
		continue
	fi
	[ -f "$dump" ] || { echo "abi: no dump $dump: run abi/check.sh --update" >&2; exit 2; }
	status=0
	# additions left out: any change reported then breaks the release's users
	abidiff --no-added-syms --headers-dir2 "$include/percpu" --drop-private-types \
		--suppressions "$here/suppressions.abignore" "$dump" "$so" >"$build/abidiff.$(basename "$lib").txt" 2>&1 || status=$?
	# abidiff's status bits: 1 error, 2 usage, 4 a change, 8 an incompatible one
	if [ $status -ne 0 ]; then
		echo "abi: $(basename "$lib"): CHANGED since $(basename "$dump") (abidiff $status):"
		cat "$build/abidiff.$(basename "$lib").txt"
		rc=1
		continue
	fi
	added=$(abidiff --headers-dir2 "$include/percpu" --drop-private-types "$dump" "$so" |
		sed -n "s/^  \[A\] //p") || true
	if [ -n "$added" ]; then
		echo "abi: $(basename "$lib"): compatible, with additions since the dump:"
		echo "$added" | sed 's/^/    /'
	else
		echo "abi: $(basename "$lib"): the same ABI as $(basename "$dump")"
	fi
done
exit $rc
