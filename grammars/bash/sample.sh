#!/usr/bin/env bash
# release.sh: builds, checks and publishes a release tarball.
# Written for lode's fixtures in the style of the install and release scripts of
# rustup (rustup-init.sh) and nvm (install.sh), both MIT/Apache-2.0; no lines copied.

set -euo pipefail

# shellcheck source=lib/log.sh
source "$(dirname "$0")/lib/log.sh"
. ./lib/platform.sh

readonly RELEASE_ROOT="${RELEASE_ROOT:-$HOME/.release}"
readonly -a TARGETS=(x86_64-linux aarch64-linux)
export RELEASE_CHANNEL="stable"
declare -r MAX_RETRIES=3
VERBOSE=0

# Prints a message to stderr when verbose output is on.
# Arguments:
#   $@ - the words of the message
say() {
    if [ "$VERBOSE" -eq 1 ]; then
        printf 'release: %s\n' "$*" >&2
    fi
}

# Stops the script with an error message.
err() {
    say "$1"
    printf 'error: %s\n' "$1" >&2
    exit 1
}

# Runs a command and stops the script if it fails.
ensure() {
    if ! "$@"; then
        err "command failed: $*"
    fi
}

# Whether a command exists on PATH.
check_cmd() {
    command -v "$1" > /dev/null 2>&1
}

need_cmd() {
    if ! check_cmd "$1"; then
        err "need '$1' (command not found)"
    fi
}

function detect_arch {
    local _cputype
    _cputype="$(uname -m)"
    case "$_cputype" in
        x86_64 | amd64)
            echo "x86_64"
            ;;
        aarch64 | arm64)
            echo "aarch64"
            ;;
        *)
            err "unsupported CPU: $_cputype"
            ;;
    esac
}

function detect_os() {
    local _ostype
    _ostype="$(uname -s)"
    # Only Linux is released for now.
    if [ "$_ostype" != "Linux" ]; then
        err "unsupported OS: $_ostype"
    fi
    echo "linux"
}

# Downloads a URL to a file, with retries.
downloader() {
    local _url="$1" _file="$2" _try=0
    while [ "$_try" -lt "$MAX_RETRIES" ]; do
        if check_cmd curl; then
            curl --proto '=https' --tlsv1.2 -sSfL "$_url" -o "$_file" && return 0
        elif check_cmd wget; then
            wget --https-only "$_url" -O "$_file" && return 0
        fi
        _try=$((_try + 1))
        say "retry $_try of $MAX_RETRIES for $_url"
        sleep 1
    done
    return 1
}

# Builds one target into the release root.
build_target() {
    local target="$1"
    local out="$RELEASE_ROOT/$target"
    mkdir -p "$out"
    say "building $target"
    ensure cargo build --release --target "$target" --target-dir "$out"
    checksum "$out/lode" > "$out/lode.sha256"
}

checksum() {
    if check_cmd sha256sum; then
        sha256sum "$1" | cut -d ' ' -f 1
    else
        shasum -a 256 "$1" | awk '{print $1}'
    fi
}

# Packs every built target into one tarball per target.
package_all() {
    local version="$1"
    for target in "${TARGETS[@]}"; do
        build_target "$target"
        tar -C "$RELEASE_ROOT/$target" -czf "lode-$version-$target.tar.gz" lode lode.sha256
    done
}

# Cleans up temporary files on exit.
cleanup() {
    rm -rf "${_tmpdir:-}"
}

usage() {
    cat <<USAGE
usage: release.sh [-v] VERSION

Builds and packages lode for: ${TARGETS[*]}
USAGE
}

main() {
    while getopts "vh" opt; do
        case "$opt" in
            v) VERBOSE=1 ;;
            h)
                usage
                exit 0
                ;;
            *)
                usage >&2
                exit 2
                ;;
        esac
    done
    shift $((OPTIND - 1))
    [ $# -eq 1 ] || { usage >&2; exit 2; }

    need_cmd cargo
    need_cmd tar
    _tmpdir="$(mktemp -d)"
    trap cleanup EXIT

    local arch os
    arch="$(detect_arch)"
    os="$(detect_os)"
    say "host is $arch-$os, channel $RELEASE_CHANNEL"
    downloader "https://example.org/keys/release.asc" "$_tmpdir/release.asc" ||
        err "could not fetch the release key"
    package_all "$1"
}

main "$@"
