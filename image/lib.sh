# Shared helpers for the HIL scripts in image/ and scripts/ (sourced, not run).
# shellcheck shell=bash

hil_cache_dir() {
    echo "${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/hearth"
}

# Seconds since the epoch with microseconds, from bash itself.
hil_now() {
    echo "${EPOCHREALTIME/,/.}"
}

# hil_elapsed START -> seconds since START, one decimal.
hil_elapsed() {
    awk -v a="$1" -v b="$(hil_now)" 'BEGIN { printf "%.1f", b - a }'
}

hil_log() {
    echo "hil: $*" >&2
}

hil_die() {
    echo "hil: error: $*" >&2
    exit 1
}

# hil_need_packages PKG... : apt-get install the Debian packages that are missing (root or sudo).
hil_need_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || hil_die "missing packages ${missing[*]} and no apt-get to install them"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || hil_die "missing packages ${missing[*]}: run as root or install sudo"
        sudo="sudo"
    fi
    hil_log "installing ${missing[*]}"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || hil_die "apt-get install ${missing[*]} failed"
}

# hil_umount_under DIR: unmounts every mount point at or below DIR, deepest first (lazily if busy).
# Used by traps, so it never fails.
hil_umount_under() {
    local dir m
    dir=$(readlink -m "$1")
    # /proc/self/mounts escapes blanks as \040; our paths have none.
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    return 0
}

# hil_chroot_mount ROOT: the kernel file systems a chroot needs (proc, sys, dev, dev/pts).
hil_chroot_mount() {
    local root=$1
    mkdir -p "$root/proc" "$root/sys" "$root/dev"
    mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
    mountpoint -q "$root/sys" || mount -t sysfs sysfs "$root/sys"
    mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
    mountpoint -q "$root/dev/pts" || mount --bind /dev/pts "$root/dev/pts"
}

# hil_binfmt_aarch64: lets the kernel run aarch64 programs through qemu-user-static (binfmt_misc,
# with the F flag so a chroot needs no interpreter inside it). Returns 1 when it cannot.
hil_binfmt_aarch64() {
    [ -d /proc/sys/fs/binfmt_misc ] || return 1
    [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || return 1
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && return 0
    update-binfmts --enable qemu-aarch64 2>/dev/null || update-binfmts --import qemu-aarch64 2>/dev/null || true
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && return 0
    printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/libexec/qemu-binfmt/aarch64-binfmt-P:OCPF' \
        >/proc/sys/fs/binfmt_misc/register 2>/dev/null
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]
}

# hil_glibc_needed ELF: the highest GLIBC_x.y symbol version an ELF file needs (any architecture).
hil_glibc_needed() {
    readelf -W --version-info "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1
}

# hil_debian_tarball SUITE ARCH [MIRROR]: prints the path of a cached tarball of a minimal Debian root
# (debootstrap --variant=minbase; arm64 on x86 via --foreign and a second stage under qemu-user-static)
# with its package lists, made once per suite, architecture and HIL_DEBIAN_RECIPE.
HIL_DEBIAN_RECIPE=1
hil_debian_tarball() {
    local suite=$1 arch=$2 mirror=${3:-http://deb.debian.org/debian} dir tarball root t
    dir=$(hil_cache_dir)/debian
    tarball="$dir/$suite-$arch-minbase-r$HIL_DEBIAN_RECIPE.tar"
    mkdir -p "$dir"
    (
        flock 8
        [ -f "$tarball" ] && exit 0
        t=$(hil_now)
        root=$(mktemp -d "$dir/.root.XXXXXX")
        chmod 755 "$root"      # the root's /: its users (_apt, daemons) must get in
        trap 'hil_umount_under "$root"; rm -rf "$root"' EXIT
        if [ "$arch" = "$(dpkg --print-architecture)" ]; then
            debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2 || hil_die "debootstrap $suite $arch failed"
        else
            hil_need_packages qemu-user-static binfmt-support
            [ "$arch" = arm64 ] || hil_die "no recipe for a $arch root on $(dpkg --print-architecture)"
            hil_binfmt_aarch64 || hil_die "cannot register qemu-aarch64 with binfmt_misc"
            debootstrap --variant=minbase --foreign --arch="$arch" "$suite" "$root" "$mirror" >&2 \
                || hil_die "debootstrap --foreign $suite $arch failed"
            hil_chroot_mount "$root"
            chroot "$root" /debootstrap/debootstrap --second-stage >&2 \
                || hil_die "debootstrap --second-stage ($arch, under qemu) failed"
            hil_umount_under "$root"
        fi
        printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s/debian-security %s-security main\n' \
            "$mirror" "$suite" "$mirror" "$suite" "${mirror%/debian}" "$suite" >"$root/etc/apt/sources.list"
        hil_chroot_mount "$root"
        chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin apt-get update -qq >&2 \
            || hil_die "apt-get update in the $suite $arch root failed"
        chroot "$root" apt-get clean
        hil_umount_under "$root"
        tar -cpf "$tarball.tmp" -C "$root" . && mv "$tarball.tmp" "$tarball"
        hil_log "$suite $arch root: $(du -h "$tarball" | cut -f1) in $(hil_elapsed "$t")s"
    ) 8>"$dir/.lock" || return 1
    echo "$tarball"
}

# The arm64 VM's programs and libraries (scripts/hil --arch arm64): busybox, libgpiod 2's tools, mosquitto and its
# clients, and what the arm64 hearthd and test bundle link besides the Swift runtime (libgpiod3, libmosquitto1,
# libyaml, libstdc++, libgcc), all from Debian trixie arm64 (Raspberry Pi OS's base).
HIL_ARM64_PACKAGES=(busybox-static gpiod mosquitto mosquitto-clients libgpiod3 libmosquitto1 libyaml-0-2 libstdc++6 libgcc-s1)
# qemu-system-aarch64's CPU for the arm64 VM (scripts/hil; HIL_ARM64_CPU overrides).
HIL_ARM64_CPU_DEFAULT=cortex-a72

# hil_debian_root SUITE ARCH PACKAGE... : prints the path of a cached Debian root (the hil_debian_tarball one,
# unpacked) with PACKAGEs installed by its own apt (under qemu-user-static for a foreign ARCH): the programs and
# shared libraries of a HIL VM for that architecture (image/build-initramfs --root). The package versions are
# those of the tarball's package lists, so the key (HIL_DEBIAN_ROOT_RECIPE, the tarball's name, the package
# names) fixes them; they are recorded in ROOT/.hearth-versions. When the mirror no longer has one of them,
# the lists are updated once and the newest is taken. Another key replaces the root made for SUITE-ARCH.
# Needs root (chroot, mounts).
HIL_DEBIAN_ROOT_RECIPE=1
hil_debian_root() {
    local suite=$1 arch=$2 tarball key dir roots t
    shift 2
    tarball=$(hil_debian_tarball "$suite" "$arch") || return 1
    key=$(printf '%s\n' "recipe=$HIL_DEBIAN_ROOT_RECIPE" "$(basename "$tarball")" "$(printf '%s\n' "$@" | sort -u)" \
        | sha256sum | cut -c1-16)
    roots=$(hil_cache_dir)/debian/roots
    dir="$roots/$suite-$arch-$key"
    mkdir -p "$roots"
    (
        flock 8
        [ -f "$dir/.hearth-ready" ] && exit 0
        t=$(hil_now)
        [ "$arch" = "$(dpkg --print-architecture)" ] || hil_binfmt_aarch64 \
            || hil_die "cannot register qemu-aarch64 with binfmt_misc (Debian packages qemu-user-static, binfmt-support)"
        hil_log "$suite $arch root with $*: unpacking $(basename "$tarball") and installing (apt under qemu-user)"
        hil_umount_under "$dir.new"; rm -rf "$dir.new"
        mkdir -p "$dir.new"
        trap 'hil_umount_under "$dir.new"' EXIT
        tar -xpf "$tarball" -C "$dir.new"
        chmod 755 "$dir.new"
        # Nothing started from maintainer scripts.
        printf '#!/bin/sh\nexit 101\n' >"$dir.new/usr/sbin/policy-rc.d"; chmod 755 "$dir.new/usr/sbin/policy-rc.d"
        hil_chroot_mount "$dir.new"
        local in=(chroot "$dir.new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8)
        if ! "${in[@]}" apt-get install -y -qq --no-install-recommends "$@" >"$dir.new/.hearth-apt.log" 2>&1; then
            hil_log "installing from the tarball's package lists failed: updating them and trying again"
            { "${in[@]}" apt-get update -qq && "${in[@]}" apt-get install -y -qq --no-install-recommends "$@"; } \
                >>"$dir.new/.hearth-apt.log" 2>&1 \
                || { tail -n 20 "$dir.new/.hearth-apt.log" >&2; hil_die "apt-get install $* in the $suite $arch root failed"; }
        fi
        "${in[@]}" apt-get clean
        "${in[@]}" dpkg-query -W "$@" >"$dir.new/.hearth-versions"
        hil_umount_under "$dir.new"
        trap - EXIT
        touch "$dir.new/.hearth-ready"
        rm -rf "$dir"
        mv "$dir.new" "$dir"
        find "$roots" -mindepth 1 -maxdepth 1 -name "$suite-$arch-*" ! -name "$(basename "$dir")" -exec rm -rf {} +
        hil_log "$suite $arch root: $(du -sh "$dir" | cut -f1) in $(hil_elapsed "$t")s ($(tr '\t' '=' <"$dir/.hearth-versions" | paste -sd' '))"
    ) 8>"$roots/.lock" || return 1
    echo "$dir"
}
