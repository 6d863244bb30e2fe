/* SPDX-License-Identifier: MIT */
/* Attach a resolved probe set (probe_resolve.h) through the loader: every site with its
 * cookie, --latency returns, the syscall map, --filter programs. */
#ifndef PW_TRACE_ATTACH_H
#define PW_TRACE_ATTACH_H

#include "engine/loader.h"
#include "trace/probe_resolve.h"

/* Bit per probe id of the --latency entries (for the loader's rodata). */
uint32_t trace_latency_mask(const struct probe_set *set);

/* 0, or a negative errno with a sentence in `why`. */
int trace_attach(const struct probe_set *set, struct loader *ld, char *why, size_t why_size);

#endif
