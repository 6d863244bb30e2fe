# shellcheck shell=bash disable=SC2153  # SUITE, DC_TAG, DC_NAME: set by the sourcing script
# debian-chroot.sh - sourced (not run) by the scripts that build a cached Debian chroot
# with debootstrap: get-interpreters.sh (unstable, for its Pythons) and
# get-release-chroot.sh (the host's own release, to install pywalk's .deb into).
#
# One copy of what they share: the mirror taken from this machine's apt sources, the
# Release signature checked with the host keyring, debootstrap in a private mount
# namespace, a build directory renamed into place only when complete, and no removal
# that could descend into a mount.
#
# The caller sets, before sourcing:
#   DC_TAG     prefix of every message             e.g. get-interpreters
#   DC_NAME    the chroot's name under the cache   e.g. debian-unstable
#   SUITE      the Debian suite to bootstrap        e.g. unstable, bookworm
# and gets CACHE_ROOT, DEST (the chroot), LOG, STAMP_NAME, CHROOT_ENV and the dc_*
# functions below; after dc_pick_mirror: MIRROR, KEYRING, NO_CHECK_GPG, RELEASE_EXPIRED.
#
# Environment (documented in each script's --help):
#   PYWALK_CACHE, PYWALK_DEBIAN_MIRROR, PYWALK_ALLOW_UNVERIFIED

CACHE_ROOT=${PYWALK_CACHE:-/var/cache/pywalk}
DEST=$CACHE_ROOT/$DC_NAME
STAMP_NAME=.pywalk-complete
LOG=$CACHE_ROOT/$DC_NAME.log
HOST_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
CHROOT_ENV=(/usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)

log()  { printf '%s: %s\n' "$DC_TAG" "$*" >&2; }
die()  { printf '%s: ERROR: %s\n' "$DC_TAG" "$*" >&2; exit 1; }
loud() {
    printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
    printf "!!! $DC_TAG: WARNING: %s\n" "$@" >&2
    printf '%s\n' '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' >&2
}

# --force / --help (the caller's header comment, up to `set -euo`); sets FORCE.
dc_parse_args() {
    local arg
    FORCE=${PYWALK_REFRESH:-0}
    for arg in "$@"; do
        case $arg in
            -f|--force) FORCE=1 ;;
            -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
            *) printf '%s: unknown argument: %s (try --help)\n' "$DC_TAG" "$arg" >&2; exit 2 ;;
        esac
    done
}

# The fast path: exit 0 with the caller's chroot_report when chroot_complete says the
# cached chroot is whole; else take the lock (waiting for a concurrent builder, whose
# chroot then answers) and return to build.
dc_cached_or_lock() {
    if [ "$FORCE" != 1 ] && chroot_complete "$DEST"; then
        log "cached chroot is complete: $DEST"
        chroot_report
        exit 0
    fi
    dc_lock
    if [ "$FORCE" != 1 ] && chroot_complete "$DEST"; then
        log "cached chroot is complete (built by a concurrent run): $DEST"
        chroot_report
        exit 0
    fi
}

# Root, then one builder at a time.
dc_lock() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot need it)"
    mkdir -p "$CACHE_ROOT"
    exec 9> "$CACHE_ROOT/.$DC_NAME.lock"
    if ! flock -n 9; then
        log "another run holds $CACHE_ROOT/.$DC_NAME.lock; waiting for it"
        flock 9
    fi
}

dc_host_tools() {
    local need_pkgs=()
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
}

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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pywalk-chroot.XXXXXX")
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
dc_cleanup() {
    local rc=$?
    rm -rf "$WORK"
    if [ -n "$BUILD" ] && [ -d "$BUILD" ]; then
        safe_rm "$BUILD" || true
    fi
    exit "$rc"
}
trap dc_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

verify_release() {  # verify_release URI KEYRING -> 0 good, 1 fetch failed, 2 bad signature
    local uri=$1 keyring=$2
    fetch "$uri/dists/$SUITE/InRelease" "$WORK/InRelease" 2>/dev/null || return 1
    gpgv --keyring "$keyring" "$WORK/InRelease" >"$WORK/gpgv.out" 2>&1 || return 2
    grep -q "^\(Suite\|Codename\): $SUITE\$" "$WORK/InRelease" || return 1
    return 0
}

# Sets MIRROR to the first apt-sources mirror whose $SUITE Release verifies.
dc_pick_mirror() {
    local candidates=() uri suite c dup rc bad_sig="" valid_until vu
    if [ -n "${PYWALK_DEBIAN_MIRROR:-}" ]; then
        candidates=("${PYWALK_DEBIAN_MIRROR%/}")
        log "mirror from PYWALK_DEBIAN_MIRROR: ${candidates[0]}"
    else
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

    MIRROR="" ; KEYRING=$HOST_KEYRING ; NO_CHECK_GPG=0
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
        # The host keyring may predate the suite's signing key: try a newer keyring
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
        RELEASE_VALID_UNTIL=$valid_until
        log "note: the mirror's '$SUITE' Release expired on $valid_until (frozen mirror?); using debootstrap's verified package lists without 'apt-get update'"
    fi
}

# Refuse to replace a chroot that someone is using (a test may have /proc
# mounted in it or a target running inside): say so and stop instead.
dc_check_not_in_use() {
    local m u
    [ -e "$DEST" ] || return 0
    m=$(mounts_below "$DEST"); u=$(users_of "$DEST")
    if [ -n "$m" ] || [ -n "$u" ]; then
        [ -z "$m" ] || log "mounted below $DEST: $(tr "\n" " " <<<"$m")"
        [ -z "$u" ] || log "processes rooted in $DEST: $(tr "\n" " " <<<"$u")"
        die "$DEST is in use; refusing to replace it (unmount / stop those first, then rerun)"
    fi
}

HAVE_UNSHARE=0
if unshare --mount --propagation private --fork -- true 2>/dev/null; then
    HAVE_UNSHARE=1
fi
in_private_ns() {
    if [ "$HAVE_UNSHARE" = 1 ]; then
        unshare --mount --propagation private --fork -- "$@"
    else
        "$@"
    fi
}

# A minbase debootstrap of $SUITE into a fresh BUILD directory next to DEST, made
# lean, non-interactive and unable to start daemons, with package lists in which
# PROBE (a package outside minbase) has a candidate.  dc_bootstrap PROBE
dc_bootstrap() {
    local probe=$1 stale arch ds_opts t0 upd_opts=()
    dc_check_not_in_use
    for stale in "$CACHE_ROOT/.$DC_NAME".build.* "$CACHE_ROOT/.$DC_NAME".old.*; do
        [ -d "$stale" ] || continue
        log "removing leftover $stale from an interrupted run"
        safe_rm "$stale" || log "leaving $stale in place"
    done
    BUILD=$(mktemp -d "$CACHE_ROOT/.$DC_NAME.build.XXXXXX")
    chmod 755 "$BUILD"
    : > "$LOG"
    [ "$HAVE_UNSHARE" = 1 ] ||
        log "note: 'unshare --mount' is not permitted here; debootstrap will run in the host mount namespace (it unmounts on exit)"

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

    cat > "$BUILD/etc/apt/apt.conf.d/90pywalk" <<'EOF'
// written by pywalk scripts/debian-chroot.sh
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
    printf '#!/bin/sh\nexit 101\n' > "$BUILD/usr/sbin/policy-rc.d"
    chmod 755 "$BUILD/usr/sbin/policy-rc.d"

    # debootstrap left its verified package lists in the chroot; only if they are
    # unusable do we 'apt-get update'.
    if ! dc_have_candidate "$probe"; then
        if [ "$RELEASE_EXPIRED" = 1 ]; then
            upd_opts=(-o Acquire::Check-Valid-Until=false)
            loud "apt-get update inside the chroot runs with Acquire::Check-Valid-Until=false because the mirror's Release expired on $RELEASE_VALID_UNTIL (signatures are still checked)."
        fi
        dc_in_chroot apt-get "${upd_opts[@]+"${upd_opts[@]}"}" update >>"$LOG" 2>&1 \
            || die "apt-get update inside the chroot failed (see $LOG)"
    fi
}

dc_in_chroot() { chroot "$BUILD" "${CHROOT_ENV[@]}" "$@"; }

dc_have_candidate() {
    local cand
    cand=$(dc_in_chroot apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    [ -n "$cand" ] && [ "$cand" != "(none)" ]
}

# The stamp (what was built, from where, with which packages), then the atomic switch:
# rename(2) the finished tree into place.  dc_commit PACKAGE...
dc_commit() {
    local old
    {
        echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "suite=$SUITE"
        echo "mirror=$MIRROR"
        echo "signature_checked=$([ "$NO_CHECK_GPG" = 1 ] && echo no || echo yes)"
        # shellcheck disable=SC2016  # dpkg-query format, not shell
        chroot "$BUILD" dpkg-query -W -f='package=${Package} ${Version}\n' \
            "$@" libc6 2>/dev/null || true
    } > "$BUILD/$STAMP_NAME"

    dc_check_not_in_use
    if [ -e "$DEST" ]; then
        old=$(mktemp -u "$CACHE_ROOT/.$DC_NAME.old.XXXXXX")
        mv -T "$DEST" "$old"
        mv -T "$BUILD" "$DEST"
        BUILD=""
        safe_rm "$old" || log "previous chroot left at $old"
    else
        mv -T "$BUILD" "$DEST"
        BUILD=""
    fi
}
