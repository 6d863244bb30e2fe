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

CACHE_ROOT=${PYWALK_CACHE:-/var/cache/pywalk}
DEST=$CACHE_ROOT/debian-unstable
STAMP_NAME=.pywalk-complete
LIST_NAME=.pywalk-interpreters
LOG=$CACHE_ROOT/debian-unstable.log
HOST_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
CHROOT_ENV=(/usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)

log()  { printf 'get-interpreters: %s\n' "$*" >&2; }
die()  { printf 'get-interpreters: ERROR: %s\n' "$*" >&2; exit 1; }
loud() {
    printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
    printf '!!! get-interpreters: WARNING: %s\n' "$@" >&2
    printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
}

FORCE=${PYWALK_REFRESH:-0}
for arg in "$@"; do
    case $arg in
        -f|--force) FORCE=1 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) die "unknown argument: $arg (try --help)" ;;
    esac
done

# ---------------------------------------------------------------------------
# Fast path: a complete chroot is recognised by its stamp plus the list of
# interpreters, each of which must still be present.
# ---------------------------------------------------------------------------
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

if [ "$FORCE" != 1 ] && chroot_complete "$DEST"; then
    log "cached chroot is complete: $DEST"
    cat "$DEST/$LIST_NAME"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot need it)"

mkdir -p "$CACHE_ROOT"
# Serialise concurrent callers; the second one finds the finished chroot.
exec 9> "$CACHE_ROOT/.debian-unstable.lock"
if ! flock -n 9; then
    log "another run holds $CACHE_ROOT/.debian-unstable.lock; waiting for it"
    flock 9
fi
if [ "$FORCE" != 1 ] && chroot_complete "$DEST"; then
    log "cached chroot is complete (built by a concurrent run): $DEST"
    cat "$DEST/$LIST_NAME"
    exit 0
fi

T_START=$(date +%s)

# ---------------------------------------------------------------------------
# Host tools.
# ---------------------------------------------------------------------------
need_pkgs=()
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v gpgv        >/dev/null 2>&1 || need_pkgs+=(gpgv)
command -v unshare     >/dev/null 2>&1 || need_pkgs+=(util-linux)
command -v flock       >/dev/null 2>&1 || need_pkgs+=(util-linux)
command -v curl >/dev/null 2>&1 || command -v wget >/dev/null 2>&1 || need_pkgs+=(wget)
[ -f "$HOST_KEYRING" ] || need_pkgs+=(debian-archive-keyring)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    log "installing host tools: ${need_pkgs[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >&2; then
        DEBIAN_FRONTEND=noninteractive apt-get update >&2 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >&2 \
            || die "cannot install host tools: ${need_pkgs[*]}"
    fi
fi
command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not available"

fetch() {  # fetch URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 2 --connect-timeout 20 -o "$2" "$1"
    else
        wget -q -T 20 -t 2 -O "$2" "$1"
    fi
}

# ---------------------------------------------------------------------------
# Mirror: derived from this machine's apt source entries, in apt's own order
# (sources.list, then sources.list.d/* lexically, one-line and deb822 forms).
# ---------------------------------------------------------------------------
list_apt_entries() {  # prints "URI SUITE" for every enabled binary ("deb") entry
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
        [ -f "$f" ] || continue
        case $f in
            *.list)
                awk '/^[ \t]*#/ { next }
                     $1 == "deb" {
                         i = 2
                         if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                         if (i + 1 <= NF) print $i, $(i + 1)
                     }' "$f" ;;
            *.sources)
                awk 'function flush(  n, m, i, j, U, S) {
                         if (uris != "" && suites != "" && types ~ /(^|[ \t])deb([ \t]|$)/ &&
                             tolower(enabled) != "no") {
                             n = split(uris, U, /[ \t]+/); m = split(suites, S, /[ \t]+/)
                             for (i = 1; i <= n; i++) if (U[i] != "")
                                 for (j = 1; j <= m; j++) if (S[j] != "") print U[i], S[j]
                         }
                         types = uris = suites = key = ""; enabled = "yes"
                     }
                     BEGIN { enabled = "yes" }
                     /^[ \t]*#/   { next }
                     /^[ \t]*$/   { flush(); next }
                     /^[ \t]/     { if (key == "uris") uris = uris " " $0
                                    else if (key == "suites") suites = suites " " $0
                                    else if (key == "types") types = types " " $0
                                    next }
                     { p = index($0, ":"); if (!p) next
                       key = tolower(substr($0, 1, p - 1)); val = substr($0, p + 1)
                       if (key == "types") types = val
                       else if (key == "uris") uris = val
                       else if (key == "suites") suites = val
                       else if (key == "enabled") { enabled = val; gsub(/[ \t]/, "", enabled) } }
                     END { flush() }' "$f" ;;
        esac
    done
}

# A plain Debian suite: a release codename or alias, without -security,
# -updates, -backports, ... suffixes (third-party repos use other names).
PLAIN_SUITE_RE='^(squeeze|wheezy|jessie|stretch|buster|bullseye|bookworm|trixie|forky|duke|sid|oldoldstable|oldstable|stable|testing|unstable)$'

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pywalk-getinterp.XXXXXX")
BUILD=""

mounts_below() {  # mount points at or below DIR, in this mount namespace
    awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo
}
users_of() {  # pids whose root or cwd is at or below DIR
    local p l
    for p in /proc/[0-9]*; do
        for l in root cwd; do
            l=$(readlink "$p/$l" 2>/dev/null) || continue
            case $l in "$1"|"$1"/*) echo "${p#/proc/}"; break ;; esac
        done
    done
}
safe_rm() {  # remove a tree we own, never descending into a mount
    local m
    m=$(mounts_below "$1")
    if [ -n "$m" ]; then
        log "NOT removing $1: mounted below it: $(tr "\n" " " <<<"$m")"
        return 1
    fi
    rm -rf --one-file-system "$1"
}
cleanup() {
    local rc=$?
    rm -rf "$WORK"
    if [ -n "$BUILD" ] && [ -d "$BUILD" ]; then
        safe_rm "$BUILD" || true
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

verify_release() {  # verify_release URI KEYRING -> 0 good, 1 fetch failed, 2 bad signature
    local uri=$1 keyring=$2
    fetch "$uri/dists/$SUITE/InRelease" "$WORK/InRelease" 2>/dev/null || return 1
    gpgv --keyring "$keyring" "$WORK/InRelease" >"$WORK/gpgv.out" 2>&1 || return 2
    grep -q "^Suite: $SUITE\$" "$WORK/InRelease" || return 1
    return 0
}

if [ -n "${PYWALK_DEBIAN_MIRROR:-}" ]; then
    candidates=("${PYWALK_DEBIAN_MIRROR%/}")
    log "mirror from PYWALK_DEBIAN_MIRROR: ${candidates[0]}"
else
    candidates=()
    while read -r uri suite; do
        case $uri in http://*|https://*|ftp://*|file:/*) ;; *) continue ;; esac
        [[ $suite =~ $PLAIN_SUITE_RE ]] || continue
        uri=${uri%/}
        dup=0
        for c in "${candidates[@]+"${candidates[@]}"}"; do [ "$c" = "$uri" ] && dup=1; done
        [ "$dup" = 1 ] || candidates+=("$uri")
    done < <(list_apt_entries)
    [ ${#candidates[@]} -gt 0 ] || die "no Debian mirror found in /etc/apt/sources.list or /etc/apt/sources.list.d/*.{list,sources} (need an enabled 'deb' entry for a plain Debian suite such as bookworm); set PYWALK_DEBIAN_MIRROR to override"
fi

MIRROR="" ; KEYRING=$HOST_KEYRING ; NO_CHECK_GPG=0 ; bad_sig=""
for c in "${candidates[@]}"; do
    rc=0; verify_release "$c" "$KEYRING" || rc=$?
    if [ "$rc" = 0 ]; then MIRROR=$c; break; fi
    if [ "$rc" = 2 ]; then
        bad_sig=${bad_sig:-$c}
        log "mirror $c: '$SUITE' Release signature does NOT verify with $KEYRING"
    else
        log "mirror $c: cannot fetch dists/$SUITE/InRelease, trying the next entry"
    fi
done

if [ -z "$MIRROR" ] && [ -n "$bad_sig" ]; then
    # The host keyring may predate unstable's signing key: try a newer keyring
    # from the host's own (verified) archive first.
    log "trying to refresh the host's debian-archive-keyring"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --only-upgrade debian-archive-keyring >&2 || true
    rc=0; verify_release "$bad_sig" "$KEYRING" || rc=$?
    if [ "$rc" = 0 ]; then
        MIRROR=$bad_sig
    elif [ "${PYWALK_ALLOW_UNVERIFIED:-0}" = 1 ]; then
        MIRROR=$bad_sig; NO_CHECK_GPG=1
        loud "the '$SUITE' Release file of $MIRROR could NOT be verified with the host keyring ($KEYRING)." \
             "PYWALK_ALLOW_UNVERIFIED=1 is set, so debootstrap runs with --no-check-gpg." \
             "The packages in the chroot are NOT authenticated. Do not trust this chroot beyond tests."
    else
        sed 's/^/    gpgv: /' "$WORK/gpgv.out" >&2 || true
        die "the '$SUITE' Release file of $bad_sig is not signed by a key in $KEYRING; refusing to continue (set PYWALK_ALLOW_UNVERIFIED=1 to bootstrap without signature checks, at your own risk)"
    fi
fi
[ -n "$MIRROR" ] || die "none of the Debian mirrors from apt sources (${candidates[*]}) serves '$SUITE'"
log "mirror: $MIRROR (suite $SUITE; Release signature verified: $([ "$NO_CHECK_GPG" = 1 ] && echo NO || echo "yes, with $KEYRING"))"

# A frozen/snapshot mirror may serve a Release file whose Valid-Until is past.
# debootstrap does not check it, and we avoid 'apt-get update' inside the chroot
# (debootstrap already left verified package lists there), so nothing needs to
# be weakened; we only report it.
RELEASE_EXPIRED=0
valid_until=$(sed -n 's/^Valid-Until: //p' "$WORK/InRelease" 2>/dev/null | head -n1)
if [ -n "$valid_until" ] && vu=$(date -d "$valid_until" +%s 2>/dev/null) && [ "$vu" -lt "$(date +%s)" ]; then
    RELEASE_EXPIRED=1
    log "note: the mirror's '$SUITE' Release expired on $valid_until (frozen mirror?); using debootstrap's verified package lists without 'apt-get update'"
fi

# ---------------------------------------------------------------------------
# Build in a temporary directory next to the destination, then rename.
# ---------------------------------------------------------------------------
# Refuse to replace a chroot that someone is using (a test may have /proc
# mounted in it or a target running inside): say so and stop instead.
check_not_in_use() {
    local m u
    [ -e "$DEST" ] || return 0
    m=$(mounts_below "$DEST"); u=$(users_of "$DEST")
    if [ -n "$m" ] || [ -n "$u" ]; then
        [ -z "$m" ] || log "mounted below $DEST: $(tr "\n" " " <<<"$m")"
        [ -z "$u" ] || log "processes rooted in $DEST: $(tr "\n" " " <<<"$u")"
        die "$DEST is in use; refusing to replace it (unmount / stop those first, then rerun)"
    fi
}
check_not_in_use

for stale in "$CACHE_ROOT"/.debian-unstable.build.* "$CACHE_ROOT"/.debian-unstable.old.*; do
    [ -d "$stale" ] || continue
    log "removing leftover $stale from an interrupted run"
    safe_rm "$stale" || log "leaving $stale in place"
done
BUILD=$(mktemp -d "$CACHE_ROOT/.debian-unstable.build.XXXXXX")
chmod 755 "$BUILD"
: > "$LOG"

HAVE_UNSHARE=0
if unshare --mount --propagation private --fork -- true 2>/dev/null; then
    HAVE_UNSHARE=1
else
    log "note: 'unshare --mount' is not permitted here; debootstrap will run in the host mount namespace (it unmounts on exit)"
fi
in_private_ns() {
    if [ "$HAVE_UNSHARE" = 1 ]; then
        unshare --mount --propagation private --fork -- "$@"
    else
        "$@"
    fi
}

arch=$(dpkg --print-architecture)
ds_opts=(--variant=minbase --arch="$arch" --components=main)
if [ "$NO_CHECK_GPG" = 1 ]; then ds_opts+=(--no-check-gpg); else ds_opts+=(--keyring="$KEYRING"); fi

log "debootstrap ${ds_opts[*]} $SUITE <build dir> $MIRROR   (log: $LOG)"
t0=$(date +%s)
if ! in_private_ns debootstrap "${ds_opts[@]}" "$SUITE" "$BUILD" "$MIRROR" >>"$LOG" 2>&1; then
    tail -n 25 "$LOG" >&2 || true
    [ -f "$BUILD/debootstrap/debootstrap.log" ] && tail -n 25 "$BUILD/debootstrap/debootstrap.log" >&2
    die "debootstrap failed (see $LOG)"
fi
log "debootstrap done in $(( $(date +%s) - t0 ))s"

in_chroot() { chroot "$BUILD" "${CHROOT_ENV[@]}" "$@"; }

# Keep the chroot lean and non-interactive; no daemons may start inside it.
cat > "$BUILD/etc/apt/apt.conf.d/90pywalk" <<'EOF'
// written by pywalk scripts/get-interpreters.sh
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
printf '#!/bin/sh\nexit 101\n' > "$BUILD/usr/sbin/policy-rc.d"
chmod 755 "$BUILD/usr/sbin/policy-rc.d"

# Which interpreters does the archive carry?  debootstrap left its verified
# package lists in the chroot; only if they are unusable do we 'apt-get update'.
have_candidate() {
    local cand
    cand=$(in_chroot apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    [ -n "$cand" ] && [ "$cand" != "(none)" ]
}
if ! have_candidate "${EXTRA_PKGS[0]}"; then
    upd_opts=()
    if [ "$RELEASE_EXPIRED" = 1 ]; then
        upd_opts=(-o Acquire::Check-Valid-Until=false)
        loud "apt-get update inside the chroot runs with Acquire::Check-Valid-Until=false because the mirror's Release expired on $valid_until (signatures are still checked)."
    fi
    in_chroot apt-get "${upd_opts[@]+"${upd_opts[@]}"}" update >>"$LOG" 2>&1 || die "apt-get update inside the chroot failed (see $LOG)"
fi

pkgs=("${EXTRA_PKGS[@]}") ; wanted=()
for v in "${VERSIONS[@]}"; do
    if have_candidate "python$v" && have_candidate "python$v-dev"; then
        pkgs+=("python$v" "python$v-dev"); wanted+=("$v")
    else
        log "python$v / python$v-dev: not available in $SUITE, skipped"
    fi
done
[ ${#wanted[@]} -gt 0 ] || die "none of python${VERSIONS[*]} is available in $SUITE"

log "apt-get install ${pkgs[*]}"
t0=$(date +%s)
if ! in_chroot apt-get install -y --no-install-recommends "${pkgs[@]}" >>"$LOG" 2>&1; then
    # Salvage what can be installed, one interpreter at a time.
    log "combined install failed; retrying package by package (see $LOG)"
    in_chroot apt-get install -y --no-install-recommends "${EXTRA_PKGS[@]}" >>"$LOG" 2>&1 \
        || die "cannot install ${EXTRA_PKGS[*]} inside the chroot (see $LOG)"
    for v in "${wanted[@]}"; do
        in_chroot apt-get install -y --no-install-recommends "python$v" "python$v-dev" >>"$LOG" 2>&1 \
            || log "python$v: installation FAILED, skipped (see $LOG)"
    done
fi
log "apt-get install done in $(( $(date +%s) - t0 ))s"
in_chroot apt-get clean >>"$LOG" 2>&1 || true

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
    if ! full=$(in_chroot "$path" -c 'import platform; print(platform.python_version())' 2>>"$LOG"); then
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
{
    echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "suite=$SUITE"
    echo "mirror=$MIRROR"
    echo "signature_checked=$([ "$NO_CHECK_GPG" = 1 ] && echo no || echo yes)"
    # shellcheck disable=SC2016  # dpkg-query format, not shell
    chroot "$BUILD" dpkg-query -W -f='package=${Package} ${Version}\n' \
        "${pkgs[@]}" libc6 2>/dev/null || true
} > "$BUILD/$STAMP_NAME"

# Atomic switch: rename(2) the finished tree into place.
check_not_in_use
if [ -e "$DEST" ]; then
    old=$(mktemp -u "$CACHE_ROOT/.debian-unstable.old.XXXXXX")
    mv -T "$DEST" "$old"
    mv -T "$BUILD" "$DEST"
    BUILD=""
    safe_rm "$old" || log "previous chroot left at $old"
else
    mv -T "$BUILD" "$DEST"
    BUILD=""
fi

log "chroot ready: $DEST ($(du -sh "$DEST" 2>/dev/null | cut -f1), built in $(( $(date +%s) - T_START ))s)"
log "use: chroot $DEST /usr/bin/python3.X ...   (no /proc needed for the interpreters;"
log "     if a test needs /proc inside, mount it in a private namespace so nothing leaks:"
log "     unshare --mount --propagation private --fork sh -c 'mount -t proc proc $DEST/proc && exec chroot $DEST ...')"
log "     note: read from the host, /proc/<pid>/maps of a process in this chroot shows HOST paths"
log "     ($DEST/usr/bin/...), so /proc/<pid>/root/<that path> does not exist; open the path as"
log "     shown, or /proc/<pid>/map_files/<start>-<end>, which works for chroots and containers alike"
cat "$DEST/$LIST_NAME"
