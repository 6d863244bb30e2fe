// SPDX-License-Identifier: MIT
/* --print's lines. Flushed one by one: a reader (a pipe to grep, a test) sees each event
 * when it happens, not when a buffer fills. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "lib/escape.h"
#include "output/out.h"
#include "trace/trace_print.h"

/* What the probe saw, from after the record's frames: decimal, as --filter compares. */
static int format_args(struct strbuf *sb, const struct pw_sample_hdr *h, size_t size)
{
	size_t at = sizeof(*h) + (size_t)h->nframes * sizeof(struct pw_frame);
	struct pw_print_args a;
	int err = 0;

	if (size < at + sizeof(a))
		return strbuf_add(sb, "-", 1);
	memcpy(&a, (const char *)h + at, sizeof(a));
	if (a.nargs > 6)
		a.nargs = 6;
	for (uint32_t i = 0; i < a.nargs && !err; i++)
		err = strbuf_addf(sb, i ? " arg%u=%" PRId64 : "arg%u=%" PRId64, i,
				  (int64_t)a.arg[i]);
	if (!err && a.has_ret)
		err = strbuf_addf(sb, a.nargs ? " ret=%" PRId64 : "ret=%" PRId64, (int64_t)a.ret);
	if (!err && !a.nargs && !a.has_ret)
		err = strbuf_add(sb, "-", 1);
	return err;
}

static int format(struct strbuf *sb, const struct trace_print *tp, const struct profile *p,
		  const struct pw_sample_hdr *h, size_t size, uint32_t proc, const uint32_t *ids,
		  uint32_t n)
{
	const struct agg *agg = profile__agg(p);
	const struct symtab *st = profile__symtab(p);
	uint64_t t = h->time_ns > tp->start_ns ? h->time_ns - tp->start_ns : 0;
	int err;

	err = strbuf_addf(sb, "%" PRIu64 ".%06" PRIu64 "\t%u\t%u\t", t / 1000000000,
			  t % 1000000000 / 1000, h->pid, h->tid);
	if (!err)
		err = escape_folded(sb, profile__proc_thread_name(p, proc, h->tid));
	if (!err)
		err = strbuf_addf(sb, "\t%s\t%" PRIu64 "\t",
				  probe_set_label(tp->set, h->probe, h->site),
				  (uint64_t)(h->weight ? h->weight : 1));
	if (!err)
		err = format_args(sb, h, size);
	if (!err)
		err = strbuf_add(sb, "\t", 1);
	for (uint32_t i = 0; i < n && !err; i++) {
		const struct agg_frame *fr = agg__frame(agg, ids[i]);

		if (i)
			err = strbuf_add(sb, ";", 1);
		if (!err)
			err = out_folded_frame(sb, st, fr);
	}
	if (!err && !n)
		err = strbuf_add(sb, "<no python frames>", 18);
	return err ? err : strbuf_add(sb, "\n", 1);
}

void trace_print_stack(void *ctx, const struct profile *p, const struct pw_sample_hdr *h,
		       size_t size, uint32_t proc, const uint32_t *ids, uint32_t n)
{
	struct trace_print *tp = ctx;
	struct strbuf sb = { 0 };
	int err;

	if (tp->err)
		return;
	err = format(&sb, tp, p, h, size, proc, ids, n);
	if (!err && (fwrite(sb.buf, 1, sb.len, tp->f) != sb.len || fflush(tp->f)))
		err = -EIO;
	if (err)
		tp->err = err;
	strbuf_free(&sb);
}
