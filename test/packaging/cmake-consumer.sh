#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The CMake consumer (test/packaging/cmake-consumer) against an installed
# percpu, built with the shared libraries and then the static ones, each
# program run; the shared build must load libpercpu*.so, the static one
# none; find_package() of the next minor release must fail. CI (steps
# install and package) and autopkgtest run it.
#
# usage: cmake-consumer.sh SOURCE-ROOT WORK-DIR VERSION [metrics] [CMAKE-ARG...]
#   VERSION: X.Y to ask find_package for; "metrics": also the metrics
#   library (component metrics, percpu::metrics); CMAKE-ARG: as
#   -DCMAKE_PREFIX_PATH=PREFIX for a percpu outside /usr.
set -eu

src=$1
work=$2
version=$3
shift 3
metrics=OFF
if [ "${1:-}" = metrics ]; then
	metrics=ON
	shift
fi
progs=consumer
[ "$metrics" = OFF ] || progs="consumer consumer-metrics"

mkdir -p "$work"
for static in OFF ON; do
	b=$work/cmake-static-$static
	rm -rf "$b"
	echo "+ cmake: PERCPU_USE_STATIC_LIBS=$static, metrics $metrics"
	cmake -S "$src/test/packaging/cmake-consumer" -B "$b" -DCONSUMER_DIR="$src/.ci" \
		-DPERCPU_VERSION="$version" -DWITH_METRICS="$metrics" \
		-DPERCPU_USE_STATIC_LIBS="$static" "$@" >"$b.log" 2>&1 ||
		{ cat "$b.log"; exit 1; }
	grep 'percpu .* from ' "$b.log"
	cmake --build "$b" >>"$b.log" 2>&1 || { cat "$b.log"; exit 1; }
	for p in $progs; do
		"$b/$p" >/dev/null
		if [ "$static" = ON ]; then
			if ldd "$b/$p" | grep percpu; then
				echo "cmake-consumer: static $p loads a percpu shared library" >&2
				exit 1
			fi
		else
			lib=libpercpu
			[ "$p" = consumer ] || lib=libpercpu-metrics
			ldd "$b/$p" | grep -q "$lib\.so\.[0-9]" ||
				{ echo "cmake-consumer: $p does not load $lib.so" >&2; exit 1; }
		fi
		echo "ok: $p (CMake, static $static) ran"
	done
done

# the version file: a newer release than the installed one is not found
next=${version%.*}.$((${version#*.} + 1))
b=$work/cmake-next
rm -rf "$b"
if cmake -S "$src/test/packaging/cmake-consumer" -B "$b" -DCONSUMER_DIR="$src/.ci" \
	-DPERCPU_VERSION="$next" "$@" >"$b.log" 2>&1; then
	cat "$b.log"
	echo "cmake-consumer: find_package(percpu $next) found percpu $version" >&2
	exit 1
fi
grep -q 'compatible' "$b.log" || { cat "$b.log"; exit 1; }
echo "ok: find_package(percpu $next) fails against $version"
