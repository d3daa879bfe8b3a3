#!/usr/bin/env bash
# Rebuild the ncpos kernel from config.fragment.
#
# Usage (from the repository root):
#   bash image/kernel/build.sh
#
# Environment:
#   NCPOS_KERNEL_BUILD_DIR  scratch directory (default /tmp/ncpos-kernel-build)
#   NCPOS_KERNEL_SRC        source tarball (default /usr/src/linux-source-6.12.tar.xz)
#   NCPOS_KERNEL_FRESH=1    wipe the scratch directory and re-extract the source
#   NCPOS_KERNEL_CONFIG_ONLY=1  stop after generating and checking .config
#                               (fast; used while iterating on the fragment)
#   NCPOS_KERNEL_JOBS       parallel make jobs (default: nproc)
#   NCPOS_KERNEL_DEBUG=1    a development kernel: lockdep (PROVE_LOCKING),
#                           KASAN, DEBUG_ATOMIC_SLEEP and DEBUG_LIST on top of
#                           the configuration (WERROR off), built in its own
#                           scratch directory (default /tmp/ncpos-kernel-debug);
#                           its bzImage stays there and is never committed
#
# Patches: patches/*.patch (next to this script) are applied to the source,
# in name order, right after it is extracted; changing one re-extracts.
#
# Outputs (next to this script): bzImage, config (the full .config), VERSION.
set -euo pipefail

export LC_ALL=C
umask 022

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fragment="$here/config.fragment"
debug="${NCPOS_KERNEL_DEBUG:-0}"
if [[ "$debug" == 1 ]]; then
	build_root="${NCPOS_KERNEL_BUILD_DIR:-/tmp/ncpos-kernel-debug}"
else
	build_root="${NCPOS_KERNEL_BUILD_DIR:-/tmp/ncpos-kernel-build}"
fi
src_tar="${NCPOS_KERNEL_SRC:-/usr/src/linux-source-6.12.tar.xz}"
jobs="${NCPOS_KERNEL_JOBS:-$(nproc)}"

log() { echo "build.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -f "$fragment" ]] || die "missing $fragment"

# --- build dependencies (Debian) -------------------------------------------
need_pkgs=()
[[ -f "$src_tar" ]] || need_pkgs+=(linux-source-6.12)
for cmd in bc bison flex make gcc cpio xz zstd patch; do
	command -v "$cmd" >/dev/null 2>&1 || need_pkgs+=("$cmd")
done
[[ -f /usr/include/libelf.h ]] || need_pkgs+=(libelf-dev)
[[ -f /usr/include/openssl/ssl.h ]] || need_pkgs+=(libssl-dev)
if ((${#need_pkgs[@]})); then
	# map command names to Debian packages
	pkgs=()
	for p in "${need_pkgs[@]}"; do
		case "$p" in
		xz) pkgs+=(xz-utils) ;;
		gcc | make) pkgs+=(build-essential) ;;
		*) pkgs+=("$p") ;;
		esac
	done
	log "installing missing build dependencies: ${pkgs[*]}"
	command -v apt-get >/dev/null || die "apt-get not available; install: ${pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "${pkgs[@]}" bc bison flex libelf-dev libssl-dev
fi
[[ -f "$src_tar" ]] || die "source tarball $src_tar still missing"
# COPYING.md names the exact source of the committed bzImage; a build from
# another version must update it (and VERSION) with the bzImage.
want_src="6.12.117-1~deb12u1"
if [[ -z "${NCPOS_KERNEL_SRC:-}" ]]; then
	have_src="$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)"
	[[ "$have_src" == "$want_src" ]] || log "WARNING: linux-source-6.12 is ${have_src:-not installed}, COPYING.md names $want_src: update it with the new bzImage"
fi

# --- extract and patch ---------------------------------------------------------
patches=()
for p in "$here"/patches/*.patch; do
	[[ -f "$p" ]] && patches+=("$p")
done
src_id="$(stat -c '%s-%Y' "$src_tar") $(basename "$src_tar") debug=$debug"
if ((${#patches[@]})); then
	# names and contents: a patch renamed or reordered re-extracts too
	src_id="$src_id patches $(cd "$here/patches" && sha256sum -- *.patch | sha256sum | cut -d' ' -f1)"
fi
stamp="$build_root/.ncpos-src-stamp"
if [[ "${NCPOS_KERNEL_FRESH:-0}" == 1 ]] || [[ ! -f "$stamp" ]] || [[ "$(cat "$stamp")" != "$src_id" ]]; then
	log "extracting $src_tar into $build_root"
	rm -rf "$build_root"
	mkdir -p "$build_root"
	tar -C "$build_root" -xJf "$src_tar"
	srcdir="$(find "$build_root" -mindepth 1 -maxdepth 1 -type d -name 'linux-source-*' | head -n1)"
	[[ -n "$srcdir" && -f "$srcdir/Makefile" ]] || die "no kernel source found in $build_root"
	for p in "${patches[@]}"; do
		log "applying $(basename "$p")"
		patch -d "$srcdir" -p1 --forward --batch --quiet <"$p" || die "$(basename "$p") does not apply to $src_tar"
	done
	echo "$src_id" >"$stamp"
else
	log "reusing extracted source in $build_root (NCPOS_KERNEL_FRESH=1 to re-extract)"
fi
srcdir="$(find "$build_root" -mindepth 1 -maxdepth 1 -type d -name 'linux-source-*' | head -n1)"
[[ -n "$srcdir" && -f "$srcdir/Makefile" ]] || die "no kernel source found in $build_root"
cd "$srcdir"

# --- reproducibility knobs ------------------------------------------------------
export KBUILD_BUILD_TIMESTAMP="2026-01-01 00:00:00 UTC"
export KBUILD_BUILD_USER=ncpos
export KBUILD_BUILD_HOST=ncpos
export KBUILD_BUILD_VERSION=1
export SOURCE_DATE_EPOCH=1767225600 # 2026-01-01T00:00:00Z
unset KCONFIG_CONFIG ARCH CROSS_COMPILE LOCALVERSION

mk() { nice -n 5 make ARCH=x86_64 "$@"; }

# --- configure ------------------------------------------------------------------
log "make x86_64_defconfig"
mk -s x86_64_defconfig
log "merging $fragment"
ARCH=x86_64 scripts/kconfig/merge_config.sh -m .config "$fragment" >/dev/null
mk -s olddefconfig

# --- verify that every fragment line stuck ---------------------------------------
bad=()
while IFS= read -r line; do
	if [[ "$line" =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
		sym="${BASH_REMATCH[1]}"
		if ! grep -qxF -- "$line" .config; then
			got="$(grep -E "^(# )?${sym}[= ]" .config || true)"
			bad+=("$sym: want '$line', got '${got:-<absent>}'")
		fi
	elif [[ "$line" =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
		sym="${BASH_REMATCH[1]}"
		# absent (invisible symbol) also means "not set"
		if got="$(grep -E "^${sym}=" .config)"; then
			bad+=("$sym: want '$line', got '$got'")
		fi
	fi
done <"$fragment"
if ((${#bad[@]})); then
	log "the following fragment options did not stick after olddefconfig:"
	for b in "${bad[@]}"; do echo "  $b" >&2; done
	die "${#bad[@]} option(s) did not stick"
fi
log "all $(grep -cE '^(CONFIG_|# CONFIG_.* is not set$)' "$fragment") fragment options verified"

if [[ "$debug" == 1 ]]; then
	debug_opts=(DEBUG_ATOMIC_SLEEP PROVE_LOCKING KASAN KASAN_GENERIC KASAN_OUTLINE DEBUG_LIST)
	log "development kernel: turning on ${debug_opts[*]}"
	for o in "${debug_opts[@]}"; do scripts/config --file .config -e "$o"; done
	# KASAN's instrumentation grows stack frames past FRAME_WARN
	scripts/config --file .config -d WERROR
	mk -s olddefconfig
	for o in "${debug_opts[@]}"; do
		grep -qx "CONFIG_$o=y" .config || die "CONFIG_$o did not stick in the development kernel's configuration"
	done
fi

if [[ "${NCPOS_KERNEL_CONFIG_ONLY:-0}" == 1 ]]; then
	log "NCPOS_KERNEL_CONFIG_ONLY=1: stopping after configuration ($srcdir/.config)"
	exit 0
fi

# --- build --------------------------------------------------------------------
log "building bzImage with $jobs jobs"
start=$(date +%s)
mk -j"$jobs" bzImage
end=$(date +%s)
log "bzImage built in $((end - start))s"
# only valid after the build: setlocalversion reads include/config/auto.conf
release="$(mk -s kernelrelease)"

if [[ "$debug" == 1 ]]; then
	log "development kernel: $srcdir/arch/x86/boot/bzImage ($(stat -c %s arch/x86/boot/bzImage) bytes); run the VM tests on it with NCPOS_VM_KERNEL=$srcdir/arch/x86/boot/bzImage"
	exit 0
fi
install -m 0644 arch/x86/boot/bzImage "$here/bzImage"
install -m 0644 .config "$here/config"
echo "$release" >"$here/VERSION"
log "wrote $here/bzImage ($(stat -c %s "$here/bzImage") bytes), $here/config, $here/VERSION ($release)"
