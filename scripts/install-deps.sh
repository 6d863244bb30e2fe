#!/bin/sh
# Install the Debian packages pywalk needs: `--build` only what building and running it takes
# (make demo), no argument also what the tests and the benchmarks take (make test).
# Idempotent: it installs only what is missing, so a second run is quick and offline.
set -eu
build="clang llvm make gcc pkg-config libbpf-dev bpftool libelf-dev libdw-dev liblzma-dev zlib1g-dev \
libncurses-dev xxd libmicrohttpd-dev libcurl4-openssl-dev python3"
tests="libcmocka-dev python3-pytest python3.11-dev python3-sympy debootstrap dpkg-dev lintian tmux \
golang-go chromium libclang-rt-dev protobuf-compiler prometheus openssl strace clang-format"
case "${1:-}" in
--build) pkgs=$build ;;
"") pkgs="$build $tests" ;;
*) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing:$missing; run as root to install them" >&2
	exit 1
fi
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
