// SPDX-License-Identifier: MIT
/* --async's table watch (async_watch.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/async_watch.h"
#include "lib/escape.h"
#include "lib/log.h"
#include "lib/util.h"
#include "pystate/asyncio_tasks.h"

/* The first look again after a quarter second (a program that imports asyncio at start),
 * then twice as long each time, up to every 4 s. */
#define FIRST_WAIT_NS 250000000ull
#define LONGEST_WAIT_NS 4000000000ull
/* Maps read in one second at most, over all targets; the others wait their turn. */
#define LOOKS_PER_SECOND 50

struct watched {
	struct target t;
	uint64_t next_ns, wait_ns;
	bool said_bad;	/* a forged table was said once: each look counts it, not says it */
	bool in_module; /* its interpreter has none built in: only _asyncio modules are looked
			 * in (the interpreter's file is opened once, not at every look) */
};

struct async_watch {
	struct loader *ld;
	struct watched *w;
	size_t n, cap;
	uint64_t second_ns; /* the second the looks are counted in */
	unsigned int looks; /* maps read in it */
	struct async_watch_stats stats;
};

struct async_watch *async_watch__new(struct loader *ld)
{
	struct async_watch *w = calloc(1, sizeof(*w));

	if (w)
		w->ld = ld;
	return w;
}

void async_watch__free(struct async_watch *w)
{
	if (!w)
		return;
	free(w->w);
	free(w);
}

/* Why a process's tasks are not read, to the user: the reason names files of its maps,
 * which it controls, so it is escaped. */
static void say_not_read(pid_t pid, const char *why)
{
	struct strbuf sb = { 0 };

	escape_folded(&sb, why);
	pw_info("pywalk: PID %d: %s; its tasks are not read\n", pid, sb.err ? "?" : sb.buf);
	strbuf_free(&sb);
}

static void drop(struct async_watch *w, size_t i)
{
	w->w[i] = w->w[--w->n];
	w->stats.watching = w->n;
}

/* Look at watched process i: its table, if it has one now. Returns 1 when it is done with
 * (found, or a table that will not do), 0 to look again later. */
static int look(struct async_watch *w, size_t i)
{
	struct watched *x = &w->w[i];
	struct async_table tab;
	struct pw_async_off o;
	char why[512];
	unsigned int rejected = 0;
	enum async_status st = async_table_find(x->t.pid, x->in_module ? NULL : x->t.binary, &tab,
						why, sizeof(why), &rejected);
	int err;

	/* a process's forged tables are counted once, however often it is looked at */
	if (rejected && !x->said_bad)
		w->stats.rejected += rejected;
	if (st == ASYNC_NOT_IMPORTED) {
		x->in_module = true;
		return 0;
	}
	if (st == ASYNC_UNREADABLE)
		return 0; /* gone, or not yet readable: its end removes it */
	if (st == ASYNC_BAD_TABLE) {
		/* a forged table: counted, and the process is looked at again (a real
		 * _asyncio may still be loaded) */
		if (!x->said_bad)
			say_not_read(x->t.pid, why);
		x->said_bad = true;
		return 0;
	}
	if (async_sampler_offsets(&tab, &x->t, &o, why, sizeof(why))) {
		w->stats.rejected++;
		say_not_read(x->t.pid, why);
		return 1;
	}
	x->said_bad |= rejected != 0;
	err = loader__set_async(w->ld, x->t.pid, &o);
	if (err) {
		w->stats.not_written++;
		pw_debug("PID %d: asyncio table not given to the sampler: %s\n", x->t.pid,
			 strerror(-err));
		return err == -E2BIG ? 1 : 0;
	}
	w->stats.found++;
	return 1;
}

int async_watch__add(struct async_watch *w, const struct target *t, uint64_t now)
{
	struct watched *x;

	if (t->ver.minor < 14 || !t->ver.aio.present) {
		w->stats.too_old++;
		return 0;
	}
	if (grow_array((void **)&w->w, &w->cap, w->n + 1, sizeof(*w->w)))
		return -ENOMEM;
	x = &w->w[w->n++];
	memset(x, 0, sizeof(*x));
	x->t = *t;
	x->wait_ns = FIRST_WAIT_NS;
	x->next_ns = now; /* at the next tick: a program that had imported it already */
	w->stats.watching = w->n;
	return 0;
}

void async_watch__remove(struct async_watch *w, uint32_t id)
{
	for (size_t i = 0; i < w->n; i++) {
		if (w->w[i].t.id == id) {
			drop(w, i);
			return;
		}
	}
}

void async_watch__tick(struct async_watch *w, uint64_t now)
{
	if (now - w->second_ns >= 1000000000ull) {
		w->second_ns = now;
		w->looks = 0;
	}
	for (size_t i = 0; i < w->n && w->looks < LOOKS_PER_SECOND;) {
		struct watched *x = &w->w[i];

		if (x->next_ns > now) {
			i++;
			continue;
		}
		w->looks++;
		if (look(w, i)) {
			drop(w, i);
			continue;
		}
		x->next_ns = now + x->wait_ns;
		x->wait_ns = x->wait_ns * 2 > LONGEST_WAIT_NS ? LONGEST_WAIT_NS : x->wait_ns * 2;
		i++;
	}
}

const struct async_watch_stats *async_watch__stats(const struct async_watch *w)
{
	return &w->stats;
}
