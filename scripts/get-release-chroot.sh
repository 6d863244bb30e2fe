#!/usr/bin/env bash
# get-release-chroot.sh - build (once) a clean minimal chroot of this host's own
# Debian release (its VERSION_CODENAME, e.g. bookworm) with python3 in it, and
# nothing of pywalk's: tests/e2e/test_deb.py installs build/pywalk_*.deb into a
# throw-away overlay of it, so that the package's Depends must resolve from the
# mirror as on a user's machine.  The cached tree itself is never modified by a test.
#
# Usage: scripts/get-release-chroot.sh [--force] [--help]
#
# Environment:
#   PYWALK_CACHE           cache root (default /var/cache/pywalk); the chroot
#                          lands in $PYWALK_CACHE/debian-CODENAME
#   PYWALK_DEBIAN_MIRROR   Debian mirror URI to use instead of the one derived
#                          from this machine's apt sources
#   PYWALK_REFRESH=1       same as --force: rebuild even if a complete chroot exists
#   PYWALK_ALLOW_UNVERIFIED=1
#                          last resort: bootstrap WITHOUT checking the archive
#                          signature when the host keyring cannot verify it
#
# Output: progress goes to stderr; stdout gets the chroot's path.
#
# Needs root.  Mirror choice, signature check, private mount namespace and
# atomic rename are get-interpreters.sh's, from scripts/debian-chroot.sh.
set -euo pipefail

PKGS=(python3)
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ -z "$SUITE" ]; then
    echo "get-release-chroot: ERROR: /etc/os-release has no VERSION_CODENAME: not a Debian release?" >&2
    exit 1
fi
DC_TAG=get-release-chroot
DC_NAME=debian-$SUITE
# shellcheck source=scripts/debian-chroot.sh
. "$(dirname "$0")/debian-chroot.sh"

dc_parse_args "$@"
chroot_complete() { [ -f "$1/$STAMP_NAME" ] && [ -x "$1/usr/bin/python3" ]; }
chroot_report() { echo "$DEST"; }
dc_cached_or_lock

T_START=$(date +%s)
dc_host_tools
dc_pick_mirror
dc_bootstrap "${PKGS[0]}"
log "apt-get install ${PKGS[*]}"
dc_in_chroot apt-get install -y --no-install-recommends "${PKGS[@]}" >>"$LOG" 2>&1 \
    || die "cannot install ${PKGS[*]} inside the chroot (see $LOG)"
dc_in_chroot apt-get clean >>"$LOG" 2>&1 || true
dc_in_chroot python3 -c 'pass' 2>>"$LOG" || die "python3 does not run in the chroot (see $LOG)"
dc_commit "${PKGS[@]}"
log "chroot ready: $DEST ($(du -sh "$DEST" 2>/dev/null | cut -f1), built in $(( $(date +%s) - T_START ))s)"
echo "$DEST"
