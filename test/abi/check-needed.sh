#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The core library's runtime dependencies are libc's (libc, the dynamic
# loader, libpthread/librt on older glibc) and liburcu's, nothing else:
# the metrics' zlib and libmicrohttpd (with gnutls) are libpercpu-metrics's.
#
# usage: check-needed.sh READELF SHARED-LIBRARY      Prints a TAP report.
set -u

readelf=$1
lib=$2
n=0
failed=0
needed=$("$readelf" -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p') || exit 1
[ -n "$needed" ] || { echo "1..1"; echo "not ok 1 - no NEEDED entries read from $lib"; exit 1; }
echo "1..$(echo "$needed" | wc -l)"
for so in $needed; do
	n=$((n + 1))
	case $so in
	libc.so.* | ld-linux*.so.* | ld-musl-*.so.* | libpthread.so.* | librt.so.* | \
	libdl.so.* | liburcu-bp.so.* | liburcu-common.so.*)
		echo "ok $n - $so" ;;
	libasan.so.* | libubsan.so.* | libtsan.so.*)
		# a sanitizer build's runtime (-Db_sanitize), not a dependency
		echo "ok $n - $so (the sanitizer build's runtime)" ;;
	*)
		echo "not ok $n - $so: the core must need only libc and liburcu"
		failed=1 ;;
	esac
done
exit $failed
