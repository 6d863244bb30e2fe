/* SPDX-License-Identifier: MIT */
/* The one-line progress report `record` keeps on stderr while it samples: rewritten in place
 * with '\r' about twice a second, only on a terminal, and blanked before anything else is
 * printed. Knows nothing about where the numbers come from. */
#ifndef PW_PROGRESS_H
#define PW_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct progress {
	bool enabled;
	uint64_t start_ns, next_ns;
	size_t shown_len; /* characters of the line now on screen, to blank it */
};

/* Start the clock at now_ns. The line is shown only when stderr is a terminal and the log
 * level keeps the summary (not --quiet). */
void progress_init(struct progress *p, uint64_t now_ns);
/* Is a new line due at now_ns? Cheap; call it every loop turn. */
bool progress_due(const struct progress *p, uint64_t now_ns);
/* Rewrite the line and schedule the next one. */
void progress_show(struct progress *p, uint64_t now_ns, uint64_t shipped, uint64_t rejected,
		   uint64_t lost);
/* Blank the line and leave the cursor at its start; a no-op when nothing is shown. */
void progress_clear(struct progress *p);

#endif
