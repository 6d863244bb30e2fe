#!/usr/bin/env bash
# get-interpreters.sh - build (once) a Debian unstable chroot that carries
# python3.13, python3.14 and python3.15 plus their -dev packages (which ship
# the CPython internal headers), gcc and libc6-dev.  End-to-end tests reuse it.
#
# Usage: scripts/get-interpreters.sh [--force] [--help]
#
# Environment:
#   PYWALK_CACHE           cache root (default /var/cache/pywalk); the chroot
#                          lands in $PYWALK_CACHE/debian-unstable
#   PYWALK_DEBIAN_MIRROR   Debian mirror URI to use instead of the one derived
#                          from this machine's apt sources
#   PYWALK_REFRESH=1       same as --force: rebuild even if a complete chroot exists
#   PYWALK_ALLOW_UNVERIFIED=1
#                          last resort: bootstrap WITHOUT checking the archive
#                          signature when the host keyring cannot verify it
#
# Output: progress goes to stderr.  stdout gets one line per interpreter:
#   <X.Y> <path inside the chroot> <full version>      e.g. 3.15 /usr/bin/python3.15 3.15.2
# and the same lines are stored in <chroot>/.pywalk-interpreters.
#
# Needs root (debootstrap, chroot).  The mirror is never hard-coded: it comes
# from the host's own apt source entries.  No mount is left behind: every step
# that mounts something (debootstrap mounts /proc, /sys, ...) runs inside a
# private mount namespace that disappears with the step, even if it is killed.
set -euo pipefail

VERSIONS=(3.13 3.14 3.15)
EXTRA_PKGS=(gcc libc6-dev)
SUITE=unstable
DC_TAG=get-interpreters
DC_NAME=debian-unstable
# shellcheck source=scripts/debian-chroot.sh
. "$(dirname "$0")/debian-chroot.sh"
LIST_NAME=.pywalk-interpreters

dc_parse_args "$@"

# A complete chroot is recognised by its stamp plus the list of interpreters, each of
# which must still be present.
chroot_complete() {
    local dir=$1 ver path full n=0
    [ -f "$dir/$STAMP_NAME" ] && [ -s "$dir/$LIST_NAME" ] || return 1
    while read -r ver path full; do
        [ -n "$ver" ] || continue
        [ -x "$dir$path" ] || return 1
        n=$((n + 1))
    done < "$dir/$LIST_NAME"
    [ "$n" -gt 0 ]
}
chroot_report() { cat "$DEST/$LIST_NAME"; }
dc_cached_or_lock

T_START=$(date +%s)
dc_host_tools
dc_pick_mirror
dc_bootstrap "${EXTRA_PKGS[0]}"

# Which interpreters does the archive carry?
pkgs=("${EXTRA_PKGS[@]}") ; wanted=()
for v in "${VERSIONS[@]}"; do
    if dc_have_candidate "python$v" && dc_have_candidate "python$v-dev"; then
        pkgs+=("python$v" "python$v-dev"); wanted+=("$v")
    else
        log "python$v / python$v-dev: not available in $SUITE, skipped"
    fi
done
[ ${#wanted[@]} -gt 0 ] || die "none of python${VERSIONS[*]} is available in $SUITE"

log "apt-get install ${pkgs[*]}"
t0=$(date +%s)
if ! dc_in_chroot apt-get install -y --no-install-recommends "${pkgs[@]}" >>"$LOG" 2>&1; then
    # Salvage what can be installed, one interpreter at a time.
    log "combined install failed; retrying package by package (see $LOG)"
    dc_in_chroot apt-get install -y --no-install-recommends "${EXTRA_PKGS[@]}" >>"$LOG" 2>&1 \
        || die "cannot install ${EXTRA_PKGS[*]} inside the chroot (see $LOG)"
    for v in "${wanted[@]}"; do
        dc_in_chroot apt-get install -y --no-install-recommends "python$v" "python$v-dev" >>"$LOG" 2>&1 \
            || log "python$v: installation FAILED, skipped (see $LOG)"
    done
fi
log "apt-get install done in $(( $(date +%s) - t0 ))s"
dc_in_chroot apt-get clean >>"$LOG" 2>&1 || true

# ---------------------------------------------------------------------------
# Check each interpreter really runs (plain chroot, no /proc mounted: exactly
# what a test will do) and record it.
# ---------------------------------------------------------------------------
: > "$WORK/list"
for v in "${VERSIONS[@]}"; do
    path=/usr/bin/python$v
    if [ ! -x "$BUILD$path" ]; then
        log "python$v: MISSING from the chroot"
        continue
    fi
    if ! full=$(dc_in_chroot "$path" -c 'import platform; print(platform.python_version())' 2>>"$LOG"); then
        log "python$v: installed but does not run in the chroot (see $LOG)"
        continue
    fi
    if [ ! -f "$BUILD/usr/include/python$v/internal/pycore_frame.h" ]; then
        log "python$v: internal headers missing (python$v-dev incomplete?)"
    fi
    printf '%s %s %s\n' "$v" "$path" "$full" >> "$WORK/list"
done
[ -s "$WORK/list" ] || die "no interpreter could be installed into the chroot (see $LOG)"

cp "$WORK/list" "$BUILD/$LIST_NAME"
dc_commit "${pkgs[@]}"

log "chroot ready: $DEST ($(du -sh "$DEST" 2>/dev/null | cut -f1), built in $(( $(date +%s) - T_START ))s)"
log "use: chroot $DEST /usr/bin/python3.X ...   (no /proc needed for the interpreters;"
log "     if a test needs /proc inside, mount it in a private namespace so nothing leaks:"
log "     unshare --mount --propagation private --fork sh -c 'mount -t proc proc $DEST/proc && exec chroot $DEST ...')"
log "     note: read from the host, /proc/<pid>/maps of a process in this chroot shows HOST paths"
log "     ($DEST/usr/bin/...), so /proc/<pid>/root/<that path> does not exist; open the path as"
log "     shown, or /proc/<pid>/map_files/<start>-<end>, which works for chroots and containers alike"
cat "$DEST/$LIST_NAME"
