#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real daemons on percpu: fetch a daemon's Debian 12 source, patch it, build
# it against percpu, run its own tests and ours, or measure it beside the
# unpatched daemon.
#
#   adopters/run.sh NAME check            its own tests and the exactness check,
#                                         on the rseq path and under PCPU_FORCE_FALLBACK=1
#   adopters/run.sh NAME bench [THREADS...]  the paired table (before/after)
#   adopters/run.sh NAME build DIR        leaves DIR/NAME-server, built against percpu
#
# NAME is a folder here (memcached, redis). percpu is the one pkg-config finds
# (PKG_CONFIG_PATH), or, when none is installed, this tree built and staged
# under the work directory. ADOPTERS_WORK (default ~/.cache/percpu-adopters)
# keeps the sources and builds between runs.
set -euo pipefail

usage()
{
	echo "usage: $0 NAME check | NAME bench [THREADS...] | NAME build DIR" >&2
	exit 2
}

[ $# -ge 2 ] || usage
here=$(cd "$(dirname "$0")" && pwd)
name=$1
shift
case "$name" in
*/* | .* | "") usage ;;
esac
[ -x "$here/$name/adopt.sh" ] || { echo "$0: no adopter '$name' (have: $(cd "$here" && ls -d */ | tr -d / | xargs))" >&2; exit 2; }
case "$1" in
check | bench | build) ;;
*) usage ;;
esac
[ "$1" != build ] || [ $# -eq 2 ] || usage
exec "$here/$name/adopt.sh" "$@"
