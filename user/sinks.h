/* SPDX-License-Identifier: MIT */
/* The agent's sinks, each behind sink_ops (export.h). Constructors return a running sink,
 * or NULL with a sentence in `why`. */
#ifndef PW_SINKS_H
#define PW_SINKS_H

#include <stdint.h>

#include "export.h"

/* One .pb.gz per window and process under `dir` (created 0750 if missing), keeping files
 * at most keep_ns old and keep_bytes in all (0: no limit). */
struct sink *sink_dir_new(const char *dir, uint64_t keep_ns, uint64_t keep_bytes,
			  const struct sink_opts *opts, char *why, size_t why_size);

#endif
