# SPDX-License-Identifier: MIT
# Sourced by each adopters/NAME/adopt.sh: the source, percpu and the host.
# Every function fails loudly; callers run under set -euo pipefail.

ADOPTERS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PERCPU_TREE=$(cd "$ADOPTERS/.." && pwd)
ADOPTERS_WORK=${ADOPTERS_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/percpu-adopters}
mkdir -p "$ADOPTERS_WORK"

# adopt_source PKG DEST: Debian 12's source package PKG, unpacked (with
# Debian's patches applied) into DEST, replacing it. The deb-src line lives in
# a private apt configuration under ADOPTERS_WORK, never in the system's.
adopt_source()
{
	local pkg=$1 dest=$2 apt=$ADOPTERS_WORK/apt o dsc

	mkdir -p "$apt/lists/partial" "$apt/src/$pkg"
	cat >"$apt/sources.list" <<-'EOS'
	deb-src http://deb.debian.org/debian bookworm main
	deb-src http://deb.debian.org/debian-security bookworm-security main
	EOS
	o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o Debug::NoLocking=1)
	dsc=$(ls "$apt/src/$pkg/${pkg}_"*.dsc 2>/dev/null | head -n 1 || true)
	if [ -z "$dsc" ]; then
		apt-get "${o[@]}" update >&2
		(cd "$apt/src/$pkg" && apt-get "${o[@]}" source --download-only "$pkg" >&2)
		dsc=$(ls "$apt/src/$pkg/${pkg}_"*.dsc | head -n 1)
	fi
	command -v dpkg-source >/dev/null || { echo "adopters: dpkg-source missing (apt-get install dpkg-dev)" >&2; return 1; }
	rm -rf "$dest"
	mkdir -p "$(dirname "$dest")"
	dpkg-source --no-check -x "$dsc" "$dest" >&2
}

# adopt_percpu: makes pkg-config find percpu and the loader find its
# libraries. An installed percpu (pkg-config percpu) is used as it is;
# otherwise this tree is built (release, no tests) and installed into a
# staging prefix under ADOPTERS_WORK, rebuilt only when the tree changed.
adopt_percpu()
{
	local stage=$ADOPTERS_WORK/percpu-stage build=$ADOPTERS_WORK/percpu-build libdir

	if pkg-config --exists percpu; then
		return 0
	fi
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" "$PERCPU_TREE" --prefix "$stage" --libdir lib \
			--buildtype release -Dtests=disabled -Dexamples=false -Dbenchmarks=false >&2
	fi
	ninja -C "$build" install >&2
	libdir=$stage/lib
	export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
	export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# adopt_cpu: the host's CPU as results must name it
adopt_cpu()
{
	awk -F': ' '
		/^vendor_id/ && !v { v = $2 } /^cpu family/ && !f { f = $2 }
		/^model\t/ && !m { m = $2 } /^model name/ && !n { n = $2 }
		END { printf "%s, %s family %s model %s, %d CPUs\n", n, v, f, m, cpus }
		/^processor/ { cpus++ }
	' /proc/cpuinfo
}
