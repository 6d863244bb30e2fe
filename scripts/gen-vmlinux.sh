#!/bin/sh
# Generate vmlinux/vmlinux.h from the running kernel's BTF. The header is committed so a
# build does not need BTF; regenerate it only to pick up new kernel types.
set -eu
out=${1:-"$(dirname "$0")/../vmlinux/vmlinux.h"}
btf=/sys/kernel/btf/vmlinux
if [ ! -r "$btf" ]; then
	echo "gen-vmlinux: $btf not readable: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2
	exit 1
fi
tmp="$out.tmp.$$"
bpftool btf dump file "$btf" format c >"$tmp"
mv "$tmp" "$out"
