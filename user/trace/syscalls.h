/* SPDX-License-Identifier: MIT */
/* This architecture's syscall names and numbers (from <sys/syscall.h> at build time). */
#ifndef PW_SYSCALLS_H
#define PW_SYSCALLS_H

#include <stddef.h>

/* Call `fn` for every syscall whose name matches the glob `pattern`, in name order;
 * returns how many matched. */
size_t syscalls_match(const char *pattern, void (*fn)(void *ctx, const char *name, int nr),
		      void *ctx);
/* Name of syscall `nr`, NULL if unknown. */
const char *syscalls_name(int nr);

#endif
