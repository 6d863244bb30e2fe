#!/bin/sh
# build-deb.sh - `make deb`: package the built $O/pywalk as $O/pywalk_VERSION_ARCH.deb.
#
# Usage (from the top of the tree, after `make`): scripts/build-deb.sh O VERSION MAINTAINER
#
# The tree is laid out by `make install` itself (DESTDIR, PREFIX=/usr, the unit in
# /lib/systemd/system), so the package holds exactly what an install does; then what
# Debian policy adds: a stripped binary, a gzipped man page, copyright and changelog in
# /usr/share/doc/pywalk, the config as a conffile, and Depends computed by
# dpkg-shlibdeps from the binary's own ELF dependencies. No maintainer scripts: the
# agent's unit is installed but neither enabled nor started.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 O VERSION MAINTAINER" >&2; exit 2; }
O=$1 VERSION=$2 MAINTAINER=$3
for tool in dpkg-deb dpkg-shlibdeps strip gzip; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "build-deb: $tool not found (apt-get install dpkg-dev binutils gzip)" >&2; exit 1; }
done
ARCH=$(dpkg --print-architecture)
STAGE=$O/deb             # dpkg-shlibdeps's layout: debian/control, debian/PACKAGE/
ROOT=$STAGE/debian/pywalk
DOC=$ROOT/usr/share/doc/pywalk
OUT=$O/pywalk_${VERSION}_$ARCH.deb

rm -rf "$STAGE"
make --no-print-directory -s O="$O" DESTDIR="$ROOT" PREFIX=/usr \
	SYSTEMD_UNIT_DIR=/lib/systemd/system install >/dev/null
# what dh_strip removes; the BPF object inside is data and keeps its BTF
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$ROOT/usr/bin/pywalk"
gzip -9n "$ROOT/usr/share/man/man1/pywalk.1"

install -d -m 0755 "$DOC"
install -m 0644 packaging/deb/copyright "$DOC/copyright"
# A native package's changelog: this build, dated by its commit (reproducible).
when=$(git log -1 --format=%ct 2>/dev/null || date +%s)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
printf 'pywalk (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
	"$VERSION" "$commit" "$MAINTAINER" "$(LC_ALL=C date -u -R -d "@$when")" |
	gzip -9n > "$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

install -D -m 0644 packaging/deb/lintian-overrides "$ROOT/usr/share/lintian/overrides/pywalk"

install -d -m 0755 "$ROOT/DEBIAN"
echo /etc/pywalk/agent.conf > "$ROOT/DEBIAN/conffiles"
# what dpkg --verify checks; conffiles have their own sums in dpkg's status
(cd "$ROOT" && find usr lib -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) \
	> "$ROOT/DEBIAN/md5sums"
chmod 0644 "$ROOT/DEBIAN/md5sums"
: > "$STAGE/debian/control"
depends=$(cd "$STAGE" && dpkg-shlibdeps -O debian/pywalk/usr/bin/pywalk | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@MAINTAINER@|$MAINTAINER|" \
	-e "s|@INSTALLED_SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
	packaging/deb/control.in > "$ROOT/DEBIAN/control"

SOURCE_DATE_EPOCH=$when dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT" >/dev/null
echo "$OUT"
