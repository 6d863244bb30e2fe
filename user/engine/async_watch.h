/* SPDX-License-Identifier: MIT */
/* --async: which targets' asyncio tables the sampler knows. The table is in the _asyncio
 * module, mapped only once the program imports asyncio, which may be long after pywalk
 * attached: a 3.14+ target is looked at when it begins and then again, at a rising
 * interval, until its table is found and handed to the sampler (or the target ends). The
 * looks are rationed over all targets, so that --all over a host of Python processes that
 * never import asyncio costs a bounded number of /proc reads a second. */
#ifndef PW_ASYNC_WATCH_H
#define PW_ASYNC_WATCH_H

#include <stdint.h>

#include "engine/loader.h"
#include "inspect/target.h"

struct async_watch_stats {
	uint64_t found;	      /* processes whose table the sampler has */
	uint64_t too_old;     /* processes before 3.14: no table to read */
	uint64_t rejected;    /* tables with impossible sizes, or that did not fit */
	uint64_t not_written; /* tables found that the sampler's map had no room for */
	uint64_t watching;    /* processes still looked at (no asyncio yet) */
};

struct async_watch;

struct async_watch *async_watch__new(struct loader *ld);
void async_watch__free(struct async_watch *w);
/* Target `t` began (now_ns() `now`): looked at now, if it can have a table. 0 or -ENOMEM. */
int async_watch__add(struct async_watch *w, const struct target *t, uint64_t now);
/* Target `id` ended: no more looks. */
void async_watch__remove(struct async_watch *w, uint32_t id);
/* Look at the targets whose turn it is. */
void async_watch__tick(struct async_watch *w, uint64_t now);
const struct async_watch_stats *async_watch__stats(const struct async_watch *w);

#endif
