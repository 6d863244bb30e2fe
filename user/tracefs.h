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

#endif
