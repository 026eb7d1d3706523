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
# libyaml, libssl3t64's libcrypto, libqrencode, libstdc++, libgcc), all from Debian trixie arm64 (Raspberry Pi OS's base).
HIL_ARM64_PACKAGES=(busybox-static gpiod mosquitto mosquitto-clients iproute2 libgpiod3 libmosquitto1 libyaml-0-2 libssl3t64
    libqrencode4 libstdc++6 libgcc-s1)
# qemu-system-aarch64's CPU for the arm64 VM (scripts/hil; HIL_ARM64_CPU overrides).
HIL_ARM64_CPU_DEFAULT=cortex-a72

# hil_debian_root SUITE ARCH PACKAGE... : prints the path of a cached Debian root holding PACKAGEs and everything
# they depend on, unpacked (dpkg-deb -x; no maintainer scripts run): the programs and shared libraries of a HIL VM
# for that architecture (image/build-initramfs --root, which runs the root's ldd in it, so bash and libc-bin come
# too). Why not debootstrap: the VM needs files, not a configured system, and debootstrap's second stage for a
# foreign architecture runs every maintainer script under qemu-user (half an hour here), where this resolves and
# unpacks natively in about a minute. The host's apt resolves against SUITE's package lists for ARCH, fetched once
# into ROOTS/apt-SUITE-ARCH (delete its lists/ for newer ones; they are also fetched again when the mirror no longer
# has a version they name); the key is HIL_DEBIAN_ROOT_RECIPE and every package file name (so the versions);
# ROOT/.hearth-packages lists them. Another key replaces the root made for SUITE-ARCH. -updates and -security
# are included. No /etc/passwd, no ld.so.cache: ldd and the VM's initramfs need neither.
HIL_DEBIAN_ROOT_RECIPE=2
hil_debian_root() {
    local suite=$1 arch=$2 mirror=http://deb.debian.org/debian roots
    shift 2
    roots=$(hil_cache_dir)/debian/roots
    mkdir -p "$roots"
    (
        flock 8
        local aptdir="$roots/apt-$suite-$arch" uris debs key dir t d resolved
        t=$(hil_now)
        mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial" "$aptdir/parts" "$aptdir/preferences.d"
        : >>"$aptdir/status"
        printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
            "$mirror" "$suite" "$mirror" "$suite-updates" "${mirror%/debian}/debian-security" "$suite-security" \
            >"$aptdir/sources.list"
        cat >"$aptdir/apt.conf" <<EOF
Dir::State::Lists "$aptdir/lists";
Dir::State::status "$aptdir/status";
Dir::Cache "$aptdir";
Dir::Cache::archives "$aptdir/archives";
Dir::Cache::pkgcache "$aptdir/pkgcache.bin";
Dir::Cache::srcpkgcache "$aptdir/srcpkgcache.bin";
Dir::Etc::SourceList "$aptdir/sources.list";
Dir::Etc::SourceParts "$aptdir/parts";
Dir::Etc::Preferences "$aptdir/preferences";
Dir::Etc::PreferencesParts "$aptdir/preferences.d";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
APT::Install-Recommends "false";
APT::Sandbox::User "root";
EOF
        apt_() { apt-get -c "$aptdir/apt.conf" -qq "$@"; }
        # What the lists resolve the packages to is kept until the lists change (apt's resolver takes seconds).
        resolved="$aptdir/resolved-$(printf '%s\n' "$@" | sha256sum | cut -c1-16)"
        if ! ls "$aptdir/lists/"*_Packages* >/dev/null 2>&1; then
            apt_ update >&2 || hil_die "apt-get update of the $suite $arch package lists failed"
            rm -f "$aptdir/resolved-"*
        fi
        # resolve PACKAGE...: the package files (names carry the versions) into $resolved. --print-uris leaves
        # out files already downloaded: none may be.
        resolve() {
            rm -f "$aptdir/archives/"*.deb
            uris=$(apt_ install --print-uris "$@") || hil_die "resolving $* for $suite $arch failed"
            awk '{ print $2 }' <<<"$uris" | sort >"$resolved"
            [ -s "$resolved" ] || hil_die "apt resolved no packages for the $suite $arch root"
        }
        # bash and libc-bin: ldd (a bash script) runs in the root.
        [ -s "$resolved" ] || resolve "$@" bash libc-bin
        debs=$(cat "$resolved")
        key=$(printf '%s\n' "recipe=$HIL_DEBIAN_ROOT_RECIPE" "$debs" | sha256sum | cut -c1-16)
        dir="$roots/$suite-$arch-$key"
        [ -f "$dir/.hearth-ready" ] && { echo "$dir"; exit 0; }
        hil_log "$suite $arch root for $*: $(wc -l <<<"$debs") packages, unpacked into $dir"
        if ! apt_ install -y --download-only "$@" bash libc-bin >&2; then
            # A version the lists name is gone from the mirror: take the newest.
            rm -f "$aptdir/resolved-"*
            apt_ update >&2 || hil_die "apt-get update of the $suite $arch package lists failed"
            resolve "$@" bash libc-bin
            debs=$(cat "$resolved")
            apt_ install -y --download-only "$@" bash libc-bin >&2 || hil_die "downloading the $suite $arch packages failed"
            key=$(printf '%s\n' "recipe=$HIL_DEBIAN_ROOT_RECIPE" "$debs" | sha256sum | cut -c1-16)
            dir="$roots/$suite-$arch-$key"
        fi
        rm -rf "$dir.new"
        # Merged /usr, as a Debian root since bookworm has it: /lib, /bin, /sbin are links into /usr.
        mkdir -p "$dir.new/usr/lib" "$dir.new/usr/bin" "$dir.new/usr/sbin" "$dir.new/tmp" "$dir.new/etc"
        ln -s usr/lib "$dir.new/lib"; ln -s usr/bin "$dir.new/bin"; ln -s usr/sbin "$dir.new/sbin"
        [ "$arch" != amd64 ] || { mkdir -p "$dir.new/usr/lib64"; ln -s usr/lib64 "$dir.new/lib64"; }
        chmod 755 "$dir.new"; chmod 1777 "$dir.new/tmp"
        while read -r d; do
            dpkg-deb --fsys-tarfile "$aptdir/archives/$d" | tar -x --keep-directory-symlink -C "$dir.new" \
                || hil_die "unpacking $d failed"
        done <<<"$debs"
        rm -rf "$dir.new/usr/share/doc" "$dir.new/usr/share/man" "$dir.new/usr/share/locale" "$aptdir/archives/"*.deb
        echo "$debs" >"$dir.new/.hearth-packages"
        touch "$dir.new/.hearth-ready"
        rm -rf "$dir"
        mv "$dir.new" "$dir"
        find "$roots" -mindepth 1 -maxdepth 1 -name "$suite-$arch-*" ! -name "$(basename "$dir")" -exec rm -rf {} +
        hil_log "$suite $arch root: $(du -sh "$dir" | cut -f1) in $(hil_elapsed "$t")s ($(grep -oE '^(gpiod|mosquitto|busybox-static|libc6)_[^_]*' "$dir/.hearth-packages" | paste -sd' '))"
        echo "$dir"
    ) 8>"$roots/.lock"
}
