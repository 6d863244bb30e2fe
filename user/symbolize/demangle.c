// SPDX-License-Identifier: MIT
#include "symbolize/demangle.h"

#include <stddef.h>
#include <string.h>

/* libstdc++'s, declared here: its header is C++ */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *demangle(const char *sym)
{
	int status = 0;
	char *out;

	/* the name is the target's: the demangler's time and stack grow with its length (and
	 * worse with nested templates), so a longer one stays as it is */
	if (!sym || strncmp(sym, "_Z", 2) || strnlen(sym, DEMANGLE_MAX + 1) > DEMANGLE_MAX)
		return NULL;
	out = __cxa_demangle(sym, NULL, NULL, &status);
	return status == 0 ? out : NULL;
}
