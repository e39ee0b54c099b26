#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The aarch64 restartable sequences on a real arm64 kernel (qemu-user has
# none): boots Debian's own arm64 kernel under qemu-system-aarch64 (-M virt
# -cpu max -smp 2, TCG; pauth-impdef=on: an implementation-defined pointer
# authentication hash, which QEMU documents as much faster to emulate) with an initramfs that holds the cross-built test
# programs, the arm64 libraries they need and a static busybox, whose /init
# runs them and powers off. Fails if a program failed, a TAP line says
# "not ok", a program did not finish, or the process did not take the rseq
# path ("percpu-mode: rseq", from .ci/aarch64-mode.c).
#
#   .ci/aarch64-system.sh BUILD CRITERION_ROOT WORK [NAME...]
#
# BUILD: a meson build with .ci/aarch64-cross.ini (.ci/run, step aarch64);
# CRITERION_ROOT: libcriterion3:arm64 unpacked (foreign_criterion there);
# WORK: a scratch directory; NAMEs: run only those of TESTS below. Needs qemu-system-arm, cpio, apt-get download
# of arm64 packages (dpkg --add-architecture arm64).
#
# The programs run with PCPU_TEST_SMALL=1 (stress loops a fiftieth): TCG is
# some 20-50x slower than the host. counter-races single-steps folds with
# ptrace, reading only memory: it runs in full (PCPU_TEST_SMALL=0). The
# sweeps of fold-races and charge-races read x86_64 registers: off x86_64
# they skip (the rest of those programs runs). Left out: shared-race (it
# single-steps a segment create, no rseq in it: 150 s here), shared-fuzz,
# shared-death, shared-procs and the metrics suites (no sequence of their
# own), the stress programs' full sizes.
set -euo pipefail

BUILD=$(realpath "$1")
CRIT=$(realpath "$2")
W=$(realpath -m "$3")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TRIPLET=aarch64-linux-gnu
TREE=$W/tree

# NAME|ENV|PROGRAM ARGS (PROGRAM relative to BUILD), in the order they run.
# Chosen to fit about 6 minutes of CI on a 2-CPU machine (see the timing
# comment in .ci/run, step aarch64_system).
TESTS=(
	"rseq||test/rseq/test-rseq --tap"
	"rseq-own|GLIBC_TUNABLES=glibc.pthread.rseq=0|test/rseq/test-rseq-own --tap"
	"cpu||test/cpu/test-cpu --tap"
	"counter||test/counter/test-counter --tap"
	"counter-races|PCPU_TEST_SMALL=0|test/counter/test-counter-races --tap"
	"fold-races||test/counter/test-fold-races --tap"
	"charge||test/charge/test-charge --tap --jobs=1"
	"charge-races||test/charge/test-charge-races --tap"
	"stat||test/stat/test-stat --tap"
	"shared||test/shared/test-shared --tap"
	"race||test/test-race"
	"charge-race||test/test-charge-race"
	"stat-race||test/test-stat-race"
)
if [ $# -gt 3 ]; then
	chosen=()
	for t in "${TESTS[@]}"; do
		for n in "${@:4}"; do
			[ "${t%%|*}" = "$n" ] && chosen+=("$t")
		done
	done
	TESTS=("${chosen[@]}")
fi
# run by the tests, not by /init: where they expect them (absolute paths)
HELPERS=(test/shared/shared-peer)

x()
{
	printf '+ %s\n' "$*"
	"$@"
}

rm -rf "$W"
mkdir -p "$W/debs" "$TREE"/{bin,lib/$TRIPLET,proc,sys,dev,tmp,mode}

# ---- Debian's arm64 kernel and a static busybox ----
kpkg=$(apt-cache depends linux-image-arm64:arm64 |
	awk '/Depends: linux-image-[0-9]/ { sub(/:arm64$/, "", $2); print $2; exit }')
[ -n "$kpkg" ] || { echo "aarch64-system: no linux-image-*-arm64 behind linux-image-arm64:arm64" >&2; exit 1; }
(cd "$W/debs" && x apt-get download "$kpkg:arm64" busybox-static:arm64)
x dpkg-deb -x "$W"/debs/linux-image-*.deb "$W/kernel"
x dpkg-deb -x "$W"/debs/busybox-static_*.deb "$W/busybox"
kernel=$(ls "$W"/kernel/boot/vmlinuz-*)
cp "$W/busybox/bin/busybox" "$TREE/bin/busybox"

# ---- the programs, at their build paths (tests name helpers by those) ----
# with the headers of the tree BUILD was built from
src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
	"$BUILD/meson-info/meson-info.json")
aarch64-linux-gnu-gcc -O2 -Wall -Werror -I"$src/include" -I"$BUILD/include" \
	"$ROOT/.ci/aarch64-mode.c" -o "$TREE/mode/percpu-mode" -L"$BUILD/lib" -lpercpu
progs=("$TREE/mode/percpu-mode")
for t in "${TESTS[@]}"; do
	p=${t##*|}
	progs+=("$BUILD/${p%% *}")
done
for p in "${HELPERS[@]}"; do
	progs+=("$BUILD/$p")
done
for p in "${progs[@]:1}"; do
	mkdir -p "$TREE$(dirname "$p")"
	cp "$p" "$TREE$p"
done

# ---- the arm64 libraries they need, transitively ----
search=("$BUILD/lib" "$CRIT/usr/lib/$TRIPLET" "/usr/lib/$TRIPLET" "/lib/$TRIPLET")
declare -A have=()
queue=("${progs[@]}")
while [ ${#queue[@]} -gt 0 ]; do
	f=${queue[0]}
	queue=("${queue[@]:1}")
	for lib in $(aarch64-linux-gnu-readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -n "${have[$lib]:-}" ] && continue
		found=
		for d in "${search[@]}"; do
			if [ -e "$d/$lib" ]; then
				found=$d/$lib
				break
			fi
		done
		[ -n "$found" ] || { echo "aarch64-system: $lib (needed by $f) not found" >&2; exit 1; }
		have[$lib]=1
		cp -L "$found" "$TREE/lib/$TRIPLET/$lib"
		queue+=("$found")
	done
done
cp -L "/usr/lib/$TRIPLET/ld-linux-aarch64.so.1" "$TREE/lib/ld-linux-aarch64.so.1"

# ---- /init ----
{
	cat <<'EOF_INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm
mount -t tmpfs shm /dev/shm
# no tmpfs on /tmp: the programs may lie under it (CI's scratch), and the
# initramfs is writable
export PATH=/bin LD_LIBRARY_PATH=/lib/aarch64-linux-gnu PCPU_TEST_SMALL=1 TMPDIR=/tmp
echo "=== kernel $(uname -r) $(uname -m), $(nproc) CPUs"
run()
{
	name=$1 env=$2
	shift 2
	echo "=== run $name"
	t0=$(date +%s)
	env $env timeout 300 "$@" </dev/null 2>&1
	rc=$?
	echo "=== done $name rc=$rc $(($(date +%s) - t0)) s"
}
run mode "" /mode/percpu-mode
EOF_INIT
	for t in "${TESTS[@]}"; do
		IFS='|' read -r name env cmd <<<"$t"
		echo "run $name \"$env\" $BUILD/$cmd"
	done
	echo 'echo "=== all done"'
	echo 'poweroff -f'
} >"$TREE/init"
chmod +x "$TREE/init"
(cd "$TREE" && find . | cpio -o -H newc --quiet | gzip -1) >"$W/initrd.gz"
echo "initramfs: $(du -h "$W/initrd.gz" | cut -f1), kernel $(basename "$kernel")"

# ---- boot ----
t0=$SECONDS
rc=0
timeout 900 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 1536 -accel tcg,thread=multi \
	-nographic -nic none -no-reboot -kernel "$kernel" -initrd "$W/initrd.gz" \
	-append "console=ttyAMA0 panic=-1 quiet rdinit=/init" </dev/null |
	tee "$W/console.log" || rc=$?
echo "aarch64-system: qemu exit $rc after $((SECONDS - t0)) s"

# ---- verdict ----
log=$W/console.log
fail=0
tr -d '\r' <"$log" >"$log.txt"
if ! grep -q '^percpu-mode: rseq ' "$log.txt"; then
	echo "aarch64-system: FAIL: the process did not take the rseq path:" >&2
	grep '^percpu-mode' "$log.txt" >&2 || echo "(no percpu-mode line)" >&2
	fail=1
fi
# one line per program, PASS or FAIL first (.ci/run counts them)
for t in mode "${TESTS[@]}"; do
	name=${t%%|*}
	line=$(grep "^=== done $name rc=" "$log.txt" || true)
	case $line in
	*" rc=0 "*) echo "PASS  $name (${line##* rc=0 })" ;;
	"") echo "FAIL  $name: did not finish"; fail=1 ;;
	*) echo "FAIL  $name: ${line#=== done }"; fail=1 ;;
	esac
done | tee "$W/verdict"
grep -q '^FAIL' "$W/verdict" && fail=1
ok=$(grep -c '^ok ' "$log.txt" || true)
skip=$(grep -c '^ok .*# SKIP' "$log.txt" || true)
notok=$(grep -c '^not ok ' "$log.txt" || true)
echo "aarch64-system: TAP: $ok ok ($skip skipped), $notok not ok"
if [ "$notok" != 0 ]; then
	grep '^not ok ' "$log.txt"
	fail=1
fi
grep -q '^=== all done' "$log.txt" || { echo "aarch64-system: FAIL: /init did not finish"; fail=1; }
exit $fail
