#!/usr/bin/env bash
# get-cpython-release.sh - build (once) CPython 3.14.7 from the release archive in
# ../shared/cpython/, twice: free-threaded (--disable-gil, "3.14.7t") and default, so the
# end-to-end tests run both layouts of one release side by side.
#
# Usage: scripts/get-cpython-release.sh [--force] [--help]
#
# Environment:
#   PYWALK_CACHE           cache root (default /var/cache/pywalk); the prefixes land in
#                          $PYWALK_CACHE/cpython-3.14.7t and $PYWALK_CACHE/cpython-3.14.7
#   PYWALK_CPYTHON_SRC     the folder holding Python-3.14.7.tar.xz and its README
#                          (default: ../shared/cpython beside the checkout)
#   PYWALK_REFRESH=1       same as --force: rebuild even if the cached prefixes match
#   CI=true                a missing archive is an error (elsewhere: one line, exit 0)
#
# Output: one line per interpreter on stdout, as get-interpreters.sh prints them:
#   <X.Y> <path> <full version>[t]      e.g. 3.14 /var/cache/pywalk/cpython-3.14.7t/bin/python3.14t 3.14.7t
# Progress: one line per step on stderr; the build's own output goes to the log file.
#
# A prefix is reused while its stamp holds the archive's sha256: a changed archive rebuilds.
# Each build happens in a scratch folder and is renamed into place only when it installed,
# so an interrupted build never leaves a prefix that looks whole.
set -euo pipefail

TAG=get-cpython-release
VERSION=3.14.7
HERE=$(cd "$(dirname "$0")" && pwd)
SRC_DIR=${PYWALK_CPYTHON_SRC:-$HERE/../../shared/cpython}
ARCHIVE=$SRC_DIR/Python-$VERSION.tar.xz
CACHE_ROOT=${PYWALK_CACHE:-/var/cache/pywalk}
LOG=$CACHE_ROOT/cpython-$VERSION.log
FORCE=${PYWALK_REFRESH:-0}
STAMP=.pywalk-sha256
# What the interpreters need to build the modules the tests use (ctypes, ssl, zlib, lzma).
BUILD_DEPS=(gcc make libffi-dev libssl-dev zlib1g-dev liblzma-dev libbz2-dev xz-utils)

log() { printf '%s: %s\n' "$TAG" "$*" >&2; }
die() { printf '%s: ERROR: %s\n' "$TAG" "$*" >&2; exit 1; }

for arg in "$@"; do
    case $arg in
        -f|--force) FORCE=1 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) printf '%s: unknown argument: %s (try --help)\n' "$TAG" "$arg" >&2; exit 2 ;;
    esac
done

if [ ! -f "$ARCHIVE" ]; then
    if [ "${CI:-}" = true ]; then
        die "$ARCHIVE is missing: CI must build the 3.14.7 interpreters"
    fi
    log "$ARCHIVE is absent (the project cloned alone): the 3.14.7 builds are skipped"
    exit 0
fi
SHA=$(sha256sum "$ARCHIVE" | cut -d' ' -f1)

# name configure-flags exe-suffix
BUILDS=("cpython-${VERSION}t --disable-gil t" "cpython-$VERSION - -")

report() {
    local name flags suffix
    for b in "${BUILDS[@]}"; do
        read -r name flags suffix <<<"$b"
        [ "$suffix" = - ] && suffix=
        printf '3.14 %s %s%s\n' "$CACHE_ROOT/$name/bin/python3.14$suffix" "$VERSION" "$suffix"
    done
}

complete() {
    local name flags suffix
    for b in "${BUILDS[@]}"; do
        read -r name flags suffix <<<"$b"
        [ "$suffix" = - ] && suffix=
        [ -x "$CACHE_ROOT/$name/bin/python3.14$suffix" ] || return 1
        [ "$(cat "$CACHE_ROOT/$name/$STAMP" 2>/dev/null)" = "$SHA" ] || return 1
    done
}

if [ "$FORCE" != 1 ] && complete; then
    report
    exit 0
fi
[ "$(id -u)" -eq 0 ] || die "must run as root (it installs build packages and writes $CACHE_ROOT)"
mkdir -p "$CACHE_ROOT"
exec 9> "$CACHE_ROOT/.cpython-$VERSION.lock"
if ! flock -n 9; then
    log "another run holds the lock; waiting for it"
    flock 9
fi
if [ "$FORCE" != 1 ] && complete; then
    report
    exit 0
fi

missing=()
for p in "${BUILD_DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing build packages: ${missing[*]}"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"; } >>"$LOG" 2>&1 \
        || die "cannot install ${missing[*]} (see $LOG)"
fi

T_ALL=$(date +%s)
for b in "${BUILDS[@]}"; do
    read -r name flags suffix <<<"$b"
    [ "$flags" = - ] && flags=
    prefix=$CACHE_ROOT/$name
    if [ "$FORCE" != 1 ] && [ "$(cat "$prefix/$STAMP" 2>/dev/null)" = "$SHA" ]; then
        continue
    fi
    t0=$(date +%s)
    log "building $name ${flags:-(default build)}; log: $LOG"
    work=$(mktemp -d "$CACHE_ROOT/.build-$name.XXXXXX")
    # The prefix is the final path (it is compiled into the interpreter); install into a
    # staging root and move the tree into place only once it installed whole.
    stage=$work/stage
    {
        tar -xJf "$ARCHIVE" -C "$work"
        cd "$work/Python-$VERSION"
        # shellcheck disable=SC2086  # flags is a word list
        ./configure --prefix="$prefix" --without-ensurepip $flags
        make -j"$(nproc)"
        make install DESTDIR="$stage"
    } >>"$LOG" 2>&1 || { rm -rf "$work"; die "building $name failed (see $LOG)"; }
    rm -rf "$prefix"
    mv "$stage$prefix" "$prefix"
    printf '%s\n' "$SHA" > "$prefix/$STAMP"
    rm -rf "$work"
    log "built $name in $(( $(date +%s) - t0 )) s"
done
log "done in $(( $(date +%s) - T_ALL )) s"
report
