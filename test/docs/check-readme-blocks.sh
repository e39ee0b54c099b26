#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every C block of the README (```c) compiles as written: each block is a
# translation unit of its own, built with the public headers only and
# warnings as errors; every C++ block (```cpp) likewise as C++17, when a C++
# compiler is given (else it is reported skipped).
#
# usage: check-readme-blocks.sh CC INCLUDE-DIR README [CXX]
# Prints a TAP report, one test per block.
set -u

cc=$1
inc=$2
readme=$3
cxx=${4:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# block N goes to $tmp/N.c (C) or $tmp/N.cpp (C++), with the README line it
# starts on in $tmp/N.line
awk -v dir="$tmp" '
	/^```c[ \t]*$/ { n++; file = dir "/" n ".c"; print NR + 1 > (dir "/" n ".line"); inblock = 1; next }
	/^```cpp[ \t]*$/ { n++; file = dir "/" n ".cpp"; print NR + 1 > (dir "/" n ".line"); inblock = 1; next }
	/^```/ { inblock = 0; next }
	inblock { print > file }
' "$readme"

n=$(ls "$tmp"/*.line 2>/dev/null | wc -l)
if [ "$n" -eq 0 ]; then
	echo "1..1"
	echo "not ok 1 - no C block found in $readme"
	exit 1
fi
echo "1..$n"
failed=0
i=1
while [ "$i" -le "$n" ]; do
	line=$(cat "$tmp/$i.line")
	if [ -f "$tmp/$i.cpp" ]; then
		if [ -z "$cxx" ]; then
			echo "ok $i - the C++ block at README.md:$line # SKIP no C++ compiler"
		elif "$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$inc" \
			-c "$tmp/$i.cpp" -o "$tmp/$i.o" >"$tmp/$i.log" 2>&1; then
			echo "ok $i - the C++ block at README.md:$line compiles"
		else
			echo "not ok $i - the C++ block at README.md:$line does not compile"
			sed 's/^/# /' "$tmp/$i.log"
			failed=1
		fi
	elif "$cc" -std=c11 -Wall -Wextra -Werror -Wno-unused-variable \
		-Wno-unused-but-set-variable -I"$inc" -c "$tmp/$i.c" -o "$tmp/$i.o" \
		> "$tmp/$i.log" 2>&1; then
		echo "ok $i - the block at README.md:$line compiles"
	else
		echo "not ok $i - the block at README.md:$line does not compile"
		sed 's/^/# /' "$tmp/$i.log"
		failed=1
	fi
	i=$((i + 1))
done
exit $failed
