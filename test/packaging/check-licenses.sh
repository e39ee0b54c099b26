#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every source file says its license, and debian/copyright says the same
# of every file:
# 1. each C/C++ source and header, meson file, Python file and script (a
#    file that starts with #!) has an SPDX-License-Identifier line first
#    (second after a #! line);
# 2. for every file of the tree, whatever its kind (a .proto, a .md, a
#    corpus file), that has an SPDX-License-Identifier line in its first
#    10 lines, the last debian/copyright stanza whose Files match it
#    (DEP-5: the last match wins) names that license, so a GPL file
#    outside a GPL stanza fails, and so does an MIT file inside one, or an
#    Apache-2.0 .proto under "Files: *";
# 3. each Files pattern of debian/copyright matches some file;
# 4. a file with no SPDX line that still carries a license notice
#    ("Licensed under", "General Public License", "Apache License", ...)
#    fails: it must say its license in an SPDX line, which 2 checks.
# The files are git's when SOURCE-ROOT is a git tree's top, else all files
# under it less the build trees (a tarball unpacked by dpkg-source).
#
# usage: check-licenses.sh SOURCE-ROOT [BUILD-ROOT]
# Prints a TAP report.
set -u

src=$(cd "$1" && pwd -P) || exit 1
build=${2:+$(cd "$2" 2>/dev/null && pwd -P)}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null) || top=
if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$src" ]; then
	git -C "$src" ls-files >"$tmp/all"
else
	# dpkg-source's .pc, debhelper's staging trees and any meson build tree
	(cd "$src" && find . \( -name .git -o -name .pc -o -name .debhelper \
		-o -path ./debian/tmp -o -path ./subprojects \
		-o -exec test -d {}/meson-private \; \) -prune -o -type f -print) |
		sed 's|^\./||' >"$tmp/all"
	if [ -f "$src/debian/control" ]; then
		for p in $(sed -n 's/^Package:[[:space:]]*//p' "$src/debian/control"); do
			grep -v "^debian/$p/" "$tmp/all" >"$tmp/all2"
			mv "$tmp/all2" "$tmp/all"
		done
	fi
	if [ -n "$build" ]; then
		case $build in
		"$src"/*)
			grep -v "^${build#"$src"/}/" "$tmp/all" >"$tmp/all2"
			mv "$tmp/all2" "$tmp/all"
			;;
		esac
	fi
fi

# the sources: by name, or by a #! first line
while IFS= read -r f; do
	case $f in
	*.c | *.h | *.cpp | *.cc | *.hpp | *.py | *.sh | meson.build | */meson.build | \
		meson_options.txt | meson.options)
		echo "$f" ;;
	*)
		[ "$(head -c 2 "$src/$f" 2>/dev/null)" = '#!' ] && echo "$f" ;;
	esac
done <"$tmp/all" >"$tmp/sources"

# every text file's SPDX line in its first 10 lines, whatever its name
# (binary files have none: grep -I)
: >"$tmp/notice"
while IFS= read -r f; do
	case $f in
	debian/copyright | COPYING) continue ;;
	esac
	[ -f "$src/$f" ] || continue
	if head -n 10 "$src/$f" | grep -Iq 'SPDX-License-Identifier:'; then
		echo "$f"
	elif grep -IEqi 'licen[cs]ed under|general public license|apache license|mozilla public license' \
		"$src/$f"; then
		echo "$f" >>"$tmp/notice"
	fi
done <"$tmp/all" >"$tmp/spdx"
sort -u "$tmp/sources" "$tmp/spdx" >"$tmp/checked"

echo "1..4"

# 1: the SPDX line, and the license it names (SPDX expression, as written);
# a source's must come first, any other file's in its first 10 lines
: >"$tmp/missing"
: >"$tmp/licensed"
while IFS= read -r f; do
	if grep -qxF -- "$f" "$tmp/sources"; then
		line=$(head -n 2 "$src/$f" | awk 'NR == 1 && /^#!/ { next } { print; exit }')
	else
		line=$(head -n 10 "$src/$f" | grep -m 1 'SPDX-License-Identifier:')
	fi
	case $line in
	*SPDX-License-Identifier:*)
		id=$(printf '%s\n' "$line" |
			sed -e 's/.*SPDX-License-Identifier:[[:space:]]*//' \
			    -e 's/[[:space:]]*\*\/.*//' -e 's/[[:space:]]*-->.*//' \
			    -e 's/[[:space:]]*$//')
		printf '%s\t%s\n' "$f" "$id" >>"$tmp/licensed"
		;;
	*) echo "$f" >>"$tmp/missing" ;;
	esac
done <"$tmp/checked"
n=$(wc -l <"$tmp/sources")
if [ "$n" -gt 0 ] && [ ! -s "$tmp/missing" ]; then
	echo "ok 1 - all $n source files begin with an SPDX-License-Identifier line"
else
	echo "not ok 1 - source files without an SPDX-License-Identifier line first (of $n):"
	sed 's/^/#   /' "$tmp/missing"
	failed=1
fi

copyright=$src/debian/copyright
if [ ! -f "$copyright" ]; then
	echo "ok 2 # SKIP no debian/copyright in this tree"
	echo "ok 3 # SKIP no debian/copyright in this tree"
	echo "ok 4 # SKIP no debian/copyright in this tree"
	exit ${failed:-0}
fi

# debian/copyright's Files stanzas as "pattern<TAB>license", in order
awk '
	/^[^ \t]/ { field = $1 }
	/^$/ { field = ""; files = ""; next }
	field == "Files:" { sub(/^Files:/, ""); files = files " " $0 }
	field == "License:" && files != "" {
		lic = $2
		n = split(files, pat, /[ \t]+/)
		for (i = 1; i <= n; i++)
			if (pat[i] != "")
				print pat[i] "\t" lic
		files = ""
	}
' "$copyright" >"$tmp/stanzas"

# 2: SPDX identifier -> the DEP-5 name debian/copyright must give
: >"$tmp/wrong"
tab=$(printf '\t')
while IFS="$tab" read -r f id; do
	case $id in
	MIT) want=Expat ;;
	GPL-2.0 | GPL-2.0-only) want=GPL-2 ;;
	GPL-2.0+ | GPL-2.0-or-later) want=GPL-2+ ;;
	*) want=$id ;;
	esac
	got=none
	while IFS="$tab" read -r pat lic; do
		# DEP-5 globs: * (slashes too) and ?, as in a case pattern
		# shellcheck disable=SC2254
		case $f in
		$pat) got=$lic ;;
		esac
	done <"$tmp/stanzas"
	[ "$got" = "$want" ] ||
		echo "$f: SPDX $id, debian/copyright says $got (wants $want)" >>"$tmp/wrong"
done <"$tmp/licensed"
if [ ! -s "$tmp/wrong" ]; then
	echo "ok 2 - debian/copyright gives each of $(wc -l <"$tmp/licensed") files its SPDX license" \
		"($(grep -c 'GPL' "$tmp/licensed") GPL, $(grep -c 'Apache' "$tmp/licensed") Apache;" \
		"$(wc -l <"$tmp/all") files scanned)"
else
	echo "not ok 2 - debian/copyright disagrees with SPDX lines:"
	sed 's/^/#   /' "$tmp/wrong"
	failed=1
fi

# 3: no stale pattern (a file renamed away from its stanza)
: >"$tmp/stale"
while IFS="$tab" read -r pat lic; do
	hit=
	while IFS= read -r f; do
		# shellcheck disable=SC2254
		case $f in
		$pat) hit=1; break ;;
		esac
	done <"$tmp/all"
	[ -n "$hit" ] || echo "$pat ($lic)" >>"$tmp/stale"
done <"$tmp/stanzas"
if [ ! -s "$tmp/stale" ]; then
	echo "ok 3 - every debian/copyright Files pattern matches a file"
else
	echo "not ok 3 - debian/copyright patterns that match no file:"
	sed 's/^/#   /' "$tmp/stale"
	failed=1
fi

# 4: a license notice without an SPDX line escapes test 2
if [ ! -s "$tmp/notice" ]; then
	echo "ok 4 - no file carries a license notice without an SPDX line"
else
	echo "not ok 4 - files with a license notice but no SPDX-License-Identifier line:"
	sed 's/^/#   /' "$tmp/notice"
	failed=1
fi
exit ${failed:-0}
