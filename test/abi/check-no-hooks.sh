#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The installed static library carries none of the test hooks that the
# suite's internal library has (lib/meson.build, PCPU_TEST_HOOKS): the
# hooks' names are found in the internal one, and in the installed one not.
#
# usage: check-no-hooks.sh NM INSTALLED.a INTERNAL.a
# Prints a TAP report.
set -u

nm=$1
installed=$2
internal=$3
hooks='pcpu_arena_fail_after|pcpu_arena_fail_resource_after|pcpu_[a-z]*_debug_|pcpu_cpu_model'

echo "1..2"
n=$("$nm" --defined-only -g "$internal" 2>/dev/null | grep -cE " ($hooks)")
if [ "$n" -gt 0 ]; then
	echo "ok 1 - the internal library has the $n test hooks"
else
	echo "not ok 1 - no test hook found in $internal: the pattern is stale"
fi
found=$("$nm" --defined-only -g "$installed" 2>/dev/null | grep -E " ($hooks)")
if [ -z "$found" ]; then
	echo "ok 2 - the installed library has no test hook"
else
	echo "not ok 2 - the installed library defines test hooks:"
	echo "$found" | sed 's/^/# /'
fi
[ "$n" -gt 0 ] && [ -z "$found" ]
