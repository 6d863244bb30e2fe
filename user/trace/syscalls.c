// SPDX-License-Identifier: MIT
/* The syscall table, generated from the C library's headers (Makefile: syscall_names.h),
 * so syscall probes need neither tracefs nor a list shipped with pywalk. */
#include <fnmatch.h>
#include <stddef.h>

#include "trace/syscalls.h"
#include "lib/util.h"

static const struct {
	const char *name;
	int nr;
} table[] = {
#define X(name, nr) { #name, nr },
#include "syscall_names.h"
#undef X
};

size_t syscalls_match(const char *pattern, void (*fn)(void *ctx, const char *name, int nr),
		      void *ctx)
{
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		if (fnmatch(pattern, table[i].name, 0))
			continue;
		n++;
		if (fn)
			fn(ctx, table[i].name, table[i].nr);
	}
	return n;
}

const char *syscalls_name(int nr)
{
	for (size_t i = 0; i < ARRAY_SIZE(table); i++)
		if (table[i].nr == nr)
			return table[i].name;
	return NULL;
}
