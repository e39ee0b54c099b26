#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Writes metrics in Prometheus's protobuf format with write-protobuf and
# decodes every message with protoc against metrics.proto (a copy of
# Prometheus's), comparing with the expected text.
# usage: check-protobuf.sh WRITE-PROTOBUF basic|native METRICS.PROTO CHECK_PROTOBUF.PY EXPECTED
# Exit 77 (skipped) without protoc or python3, or where write-protobuf says so.
set -u
writer=$1
mode=$2
proto=$3
script=$4
expected=$5
command -v protoc >/dev/null 2>&1 || { echo "no protoc: skipped"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "no /usr/bin/python3: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$writer" "$mode" "$tmp/body"
rc=$?
[ $rc -eq 77 ] && { echo "write-protobuf $mode: skipped"; exit 77; }
[ $rc -eq 0 ] || { echo "write-protobuf $mode failed ($rc)"; exit 1; }
exec /usr/bin/python3 "$script" "$tmp/body" "$proto" "$expected"
