/* SPDX-License-Identifier: MIT */
/* What trace needs of a binary to probe it: a function's file offset (uprobes) and the
 * USDT notes it carries. Files are untrusted: every index and size read is checked. */
#ifndef PW_ELFPROBE_H
#define PW_ELFPROBE_H

#include <stdint.h>

/* File offset of function `name` (.symtab, else .dynsym), as uprobes take it.
 * 0, -ENOENT (no such function), -ENOEXEC (not ELF) or another negative errno. */
int elfprobe_func_offset(int fd, const char *name, uint64_t *offset);

/* Call `fn` for every defined function whose name matches the glob `pattern` (sorted, each
 * name once). 0 or a negative errno. */
int elfprobe_list_funcs(int fd, const char *pattern, void (*fn)(void *ctx, const char *name),
			void *ctx);

/* Call `fn` for every USDT (stapsdt) probe, "provider:name", sorted, each once. 0 or a
 * negative errno. */
int elfprobe_list_usdt(int fd, void (*fn)(void *ctx, const char *probe), void *ctx);

#endif
