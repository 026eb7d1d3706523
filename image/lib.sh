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
