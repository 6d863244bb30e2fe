/* SPDX-License-Identifier: MIT */
/* tracefs, for the tracepoints that are not syscalls: mounted at /sys/kernel/tracing when
 * it is not (this is often the case at boot), and its events listed by glob. */
#ifndef PW_TRACEFS_H
#define PW_TRACEFS_H

#include <stdbool.h>
#include <stddef.h>

#define TRACEFS_DIR "/sys/kernel/tracing"

/* Make sure tracefs is mounted at TRACEFS_DIR, mounting it when it is not (*mounted tells
 * whether this call did). 0, or a negative errno with a sentence in `why`. */
int tracefs_ensure(bool *mounted, char *why, size_t why_size);

/* Call `fn` for every tracepoint CATEGORY:NAME matching the two globs, sorted; returns
 * how many or a negative errno. */
int tracefs_match(const char *category, const char *name,
		  void (*fn)(void *ctx, const char *category, const char *name), void *ctx);

/* A scalar field of tracepoint CATEGORY:NAME's record, from its format file. */
struct tracefs_field {
	unsigned int offset, size; /* bytes; size 1, 2, 4 or 8 */
	bool is_signed;
};

/* 0, -ENOENT (no such field), -EINVAL (not a scalar: an array, a string) or -errno. */
int tracefs_field(const char *category, const char *name, const char *field,
		  struct tracefs_field *out);

#endif
