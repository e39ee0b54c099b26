#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# RELEASING.md's steps on the last commit, in a scratch clone, without
# signing or publishing: NEWS names the version, the versions agree, the
# ABI matches abi/, a tag can be made, the tarball builds (with its suite
# when --with-dist-tests is given; CI's package step runs that suite).
#
# usage: .ci/release-dry-run.sh SOURCE-TREE BUILDDIR SCRATCH
#   BUILDDIR: a build of SOURCE-TREE with debug information (for abi/check.sh)
set -euo pipefail

src=$1
build=$2
scratch=$3
version=$(meson introspect --projectinfo "$build" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
short=${version%.*}

echo "release-dry-run: percpu $version"
echo "--- 1. NEWS.md's first section is $short's"
first=$(grep -m1 '^## ' "$src/NEWS.md")
case $first in
"## $short "*) echo "$first" ;;
*) echo "release-dry-run: NEWS.md's first section is not $short's: $first" >&2; exit 1 ;;
esac
case $first in
*unreleased*) echo "    (unreleased: a release would date it here)" ;;
esac

echo "--- 2. the versions agree (meson.build, debian/changelog, version scripts)"
sh "$src/test/packaging/check-debian.sh" "$src" "$version"

echo "--- 3. the ABI against abi/"
sh "$src/abi/check.sh" "$build"

echo "--- 4. a tag on the last commit (unsigned in a dry run)"
rm -rf "$scratch/clone"
git clone -q "$src" "$scratch/clone"
git -C "$scratch/clone" -c user.name=dry-run -c user.email=dry-run@invalid \
	tag -a "v$version" -m "percpu $version (dry run)"
[ "$(git -C "$scratch/clone" describe --exact-match)" = "v$version" ]
echo "    v$version -> $(git -C "$scratch/clone" rev-parse --short HEAD)"

echo "--- 5. the tarball from the tag"
meson setup "$scratch/dist" "$scratch/clone" -Dtests=disabled -Dexamples=false \
	-Dbenchmarks=false >/dev/null
meson dist -C "$scratch/dist" --formats xztar --no-tests
(cd "$scratch/dist/meson-dist" && sha256sum -c "percpu-$version.tar.xz.sha256sum")

echo "--- 6. signature: skipped in a dry run (gpg --armor --detach-sign)"
echo "release-dry-run: OK"
