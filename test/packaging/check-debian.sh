#!/bin/sh
# SPDX-License-Identifier: MIT
#
# debian/ agrees with the tree: the changelog's version is meson.build's,
# the symbols file is what debian/symbols-from-map.sh makes of the version
# script, and no version node is newer than the project (a package would
# otherwise claim a version that lacks symbols it holds). And what 0.4's
# packages got wrong, as far as debian/ alone shows it (.ci/run's chroot
# step checks the installed result):
# 4. libpercpu-dev depends on no package of the metrics library's (HTTP,
#    TLS, zlib, curl), and libpercpu-metrics-dev exists for them, with
#    libunistring-dev, which a static link needs (gnutls.pc names
#    -lunistring), and libcurl's private libraries' -dev packages (curl.pc's
#    Libs.private), which libcurl's -dev package only suggests;
# 5. Build-Depends has no doxygen (the man pages need python3 only);
# 6. no lintian override of initial-upload-closes-no-bugs once the
#    changelog has more than one entry (it cannot fire);
# 7. percpu-tools is Multi-Arch: foreign (a program, no library);
# 8. the packages are built with libcurl (-Dcurl=enabled, Build-Depends
#    libcurl4-gnutls-dev): pcpu_metrics_push() is not -ENOTSUP there.
#
# usage: check-debian.sh SOURCE-ROOT PROJECT-VERSION
# Prints a TAP report.
set -u

src=$1
version=$2

echo "1..8"
if [ ! -f "$src/debian/changelog" ]; then
	for i in 1 2 3 4 5 6 7 8; do
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

# field PACKAGE FIELD: a debian/control field of a binary package (or of
# the source, PACKAGE "-"), continuation lines joined, comments dropped
field()
{
	awk -v pkg="$1" -v name="$2" '
		/^#/ { next }
		/^$/ { para++; mine = 0; infield = 0; next }
		/^Source:/ && pkg == "-" { mine = 1 }
		/^Package:/ { mine = ($2 == pkg) }
		/^[^ \t]/ { infield = (mine && index($0, name ":") == 1)
			if (infield) { sub(/^[^:]*:[ \t]*/, ""); printf "%s ", $0 }
			next }
		infield { printf "%s ", $0 }
		END { print "" }
	' "$src/debian/control"
}

core=$(field libpercpu-dev Depends | tr -s ' \t' ' ')
metrics=$(field libpercpu-metrics-dev Depends | tr -s ' \t' ' ')
suggests=$(field libpercpu-metrics-dev Suggests | tr -s ' \t' ' ')
tests=$(tr -s ' \t\n' ' ' < "$src/debian/tests/control")
bad=$(echo "$core" | tr ',' '\n' | grep -E 'libmicrohttpd|zlib1g|gnutls|nettle|curl|libpercpu-metrics' || true)
lacks=
# what pkg-config needs to answer at all: Depends
for dev in libmicrohttpd-dev libunistring-dev libcurl4-gnutls-dev zlib1g-dev; do
	echo "$metrics" | grep -q "$dev" || lacks="$lacks $dev"
done
# what a static link adds: suggested, and installed by the static test
for dev in libnghttp2-dev librtmp-dev libssh2-1-dev libpsl-dev libkrb5-dev libldap-dev \
	libzstd-dev libbrotli-dev; do
	echo "$suggests" | grep -q "$dev" || lacks="$lacks $dev(Suggests)"
	echo "$tests" | grep -q "Tests: build-metrics-consumer Depends:.*$dev" ||
		lacks="$lacks $dev(build-metrics-consumer)"
	echo "$metrics" | grep -q "$dev" && lacks="$lacks $dev(not in Depends)"
done
if [ -z "$bad" ] && [ -z "$lacks" ]; then
	echo "ok 4 - libpercpu-dev needs no metrics package; libpercpu-metrics-dev has what pkg-config needs and suggests what a static link adds"
else
	echo "not ok 4 - libpercpu-dev Depends: $core; libpercpu-metrics-dev Depends: ${metrics:-(none)}; Suggests: ${suggests:-(none)}"
	[ -z "$lacks" ] || echo "# libpercpu-metrics-dev lacks:$lacks"
	failed=1
fi

if field - Build-Depends | grep -q 'doxygen'; then
	echo "not ok 5 - Build-Depends has doxygen: $(field - Build-Depends)"
	failed=1
else
	echo "ok 5 - Build-Depends has no doxygen"
fi

entries=$(grep -c '^percpu (' "$src/debian/changelog")
stale=$(grep -l 'initial-upload-closes-no-bugs' "$src"/debian/*lintian-overrides \
	"$src"/debian/source/lintian-overrides 2>/dev/null | tr '\n' ' ')
if [ "$entries" -gt 1 ] && [ -n "$stale" ]; then
	echo "not ok 6 - initial-upload-closes-no-bugs overridden with $entries changelog entries: $stale"
	failed=1
else
	echo "ok 6 - no override of initial-upload-closes-no-bugs ($entries changelog entries)"
fi

ma=$(field percpu-tools Multi-Arch | tr -d ' \t')
if [ "$ma" = foreign ]; then
	echo "ok 7 - percpu-tools is Multi-Arch: foreign"
else
	echo "not ok 7 - percpu-tools is Multi-Arch: '$ma', not foreign"
	failed=1
fi
if grep -q -- '-Dcurl=enabled' "$src/debian/rules" &&
	field - Build-Depends | grep -q 'libcurl4-gnutls-dev'; then
	echo "ok 8 - the packages are built with libcurl (pcpu_metrics_push())"
else
	echo "not ok 8 - debian/rules lacks -Dcurl=enabled or Build-Depends lacks libcurl4-gnutls-dev"
	failed=1
fi
exit ${failed:-0}
