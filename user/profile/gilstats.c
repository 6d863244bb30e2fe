// SPDX-License-Identifier: MIT
/* --gil-stats (gilstats.h). */
#include <errno.h>
#include <stdlib.h>

#include "lib/escape.h"
#include "profile/gilstats.h"
#include "lib/intern.h"
#include "lib/util.h"

struct gilstats {
	struct intern threads; /* struct gil_thread, by (target, tid) */
};

struct key {
	uint32_t target, tid;
};

static bool thread_eq(const void *item, const void *key)
{
	const struct gil_thread *t = item;
	const struct key *k = key;

	return t->target == k->target && t->tid == k->tid;
}

struct gilstats *gilstats__new(void)
{
	struct gilstats *g = calloc(1, sizeof(*g));

	if (g)
		g->threads = (struct intern)INTERN_INIT(struct gil_thread, thread_eq);
	return g;
}

void gilstats__free(struct gilstats *g)
{
	if (!g)
		return;
	intern_free(&g->threads);
	free(g);
}

int gilstats__add(struct gilstats *g, const struct pw_sample_hdr *h)
{
	struct key k = { h->target, h->tid };
	struct gil_thread new = { .target = h->target, .pid = h->pid, .tid = h->tid }, *t;
	int64_t id = intern_put(&g->threads, hash_mix64((uint64_t)h->target << 32 | h->tid), &k,
				&new, NULL);

	if (id < 0)
		return (int)id;
	t = intern_at(&g->threads, (size_t)id);
	if (h->probe == PW_PROBE_OFFCPU)
		t->off_ns += h->weight;
	else if (!(h->flags & PW_SF_GIL_KNOWN))
		t->unknown++;
	else if (h->flags & PW_SF_GIL_HELD)
		t->held++;
	else
		t->not_held++;
	return 0;
}

size_t gilstats__count(const struct gilstats *g)
{
	return intern_count(&g->threads);
}

const struct gil_thread *gilstats__at(const struct gilstats *g, size_t i)
{
	return i < intern_count(&g->threads) ? intern_at(&g->threads, i) : NULL;
}

static void share(FILE *f, double part, double total)
{
	if (total > 0)
		fprintf(f, " %7.1f%%", 100.0 * part / total);
	else
		fprintf(f, " %8s", "-");
}

void gilstats__print(const struct gilstats *g, FILE *f, uint64_t period_ns, bool off_cpu_seen,
		     gilstats_name_fn name, void *ctx)
{
	size_t n = gilstats__count(g);
	struct strbuf shown = { 0 };

	fprintf(f, "pywalk: GIL per thread, share of its %s:\n",
		off_cpu_seen ? "time (on-CPU samples and time off CPU)" : "on-CPU samples");
	if (!n) {
		fprintf(f, "  (no thread was sampled)\n");
		return;
	}
	fprintf(f, "  %-8s %-8s %-24s %9s %8s %9s %8s %8s\n", "PID", "TID", "THREAD",
		off_cpu_seen ? "SECONDS" : "SAMPLES", "HELD", "NOT-HELD", "OFF-CPU", "UNKNOWN");
	for (size_t i = 0; i < n; i++) {
		const struct gil_thread *t = gilstats__at(g, i);
		/* wall: a sample stands for a period on CPU, in the unit of the time off CPU */
		double unit = off_cpu_seen && period_ns ? (double)period_ns : 1.0;
		double held = (double)t->held * unit, not_held = (double)t->not_held * unit;
		double unknown = (double)t->unknown * unit,
		       off = off_cpu_seen ? (double)t->off_ns : 0;
		double total = held + not_held + unknown + off;

		/* a thread names itself: escaped, so it cannot write to the terminal */
		strbuf_reset(&shown);
		if (escape_folded(&shown, name ? name(ctx, t->target, t->tid) : "?"))
			break;
		fprintf(f, "  %-8u %-8u %-24s", t->pid, t->tid, shown.buf ? shown.buf : "");
		if (off_cpu_seen)
			fprintf(f, " %9.3f", total / 1e9);
		else
			fprintf(f, " %9llu",
				(unsigned long long)(t->held + t->not_held + t->unknown));
		share(f, held, total);
		share(f, not_held, total);
		if (off_cpu_seen)
			share(f, off, total);
		else
			fprintf(f, " %8s", "-");
		share(f, unknown, total);
		fprintf(f, "\n");
	}
	strbuf_free(&shown);
	fprintf(f,
		"  HELD: on CPU holding the GIL; NOT-HELD: on CPU without it (waiting for it, "
		"or in C code that released it)%s\n",
		off_cpu_seen ? "; OFF-CPU: sleeping, blocked or preempted"
			     : "; time off CPU is seen with --mode wall");
}
