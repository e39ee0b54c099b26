#!/bin/sh
# SPDX-License-Identifier: MIT
#
# debian/ agrees with the tree: the changelog's version is meson.build's,
# the symbols file is what debian/symbols-from-map.sh makes of the version
# script, and no version node is newer than the project (a package would
# otherwise claim a version that lacks symbols it holds).
#
# usage: check-debian.sh SOURCE-ROOT PROJECT-VERSION
# Prints a TAP report.
set -u

src=$1
version=$2

echo "1..3"
if [ ! -f "$src/debian/changelog" ]; then
	for i in 1 2 3; do
		echo "ok $i # SKIP no debian/ in this tree"
	done
	exit 0
fi

# "percpu (0.3.0-1) unstable; urgency=medium": the upstream part, before
# the last '-'
deb=$(sed -n '1s/^percpu (\([^)]*\)).*/\1/p' "$src/debian/changelog")
upstream=${deb%-*}
if [ "$upstream" = "$version" ]; then
	echo "ok 1 - debian/changelog's version $deb is meson.build's $version"
else
	echo "not ok 1 - debian/changelog's version '$deb' is not meson.build's $version-N"
	echo "# add an entry to debian/changelog (dch -v $version-1) when the version changes"
	failed=1
fi

want=$(mktemp) || exit 1
trap 'rm -f "$want" "$want.diff"' EXIT
# symbols_match MAP SONAME PACKAGE: the package's symbols file is the script's
symbols_match()
{
	(cd "$src" && sh debian/symbols-from-map.sh "$1" "$2" "$3") >"$want"
	if diff -u "$src/debian/$3.symbols" "$want" >"$want.diff"; then
		return 0
	fi
	echo "# debian/$3.symbols differs from $1:"
	sed 's/^/# /' "$want.diff"
	echo "# regenerate: debian/symbols-from-map.sh $1 $2 $3 >debian/$3.symbols"
	return 1
}
if symbols_match lib/libpercpu.map libpercpu.so.2 libpercpu2 &&
	symbols_match metrics/libpercpu-metrics.map libpercpu-metrics.so.2 libpercpu-metrics2; then
	echo "ok 2 - debian/*.symbols list exactly the version scripts' symbols"
else
	echo "not ok 2 - a debian/*.symbols file differs from its version script"
	failed=1
fi

newest=$(sed -n 's/^PERCPU\(_METRICS\)\{0,1\}_\([0-9][0-9]*\.[0-9][0-9]*\)[ \t]*{.*/\2.0/p' \
	"$src/lib/libpercpu.map" "$src/metrics/libpercpu-metrics.map" | sort -V | tail -n 1)
if [ -n "$newest" ] && [ "$(printf '%s\n%s\n' "$newest" "$version" | sort -V | tail -n 1)" = "$version" ]; then
	echo "ok 3 - the newest version node ($newest) is not newer than the project ($version)"
else
	echo "not ok 3 - the version script has node $newest but meson.build says $version"
	failed=1
fi
exit ${failed:-0}
