// SPDX-License-Identifier: MIT
/* `pywalk top`: a live, top-like view of the functions running Python processes spend CPU
 * in. Parses its options on top of the shared ones and runs the engine with a hook that
 * reads keys and, once per interval, folds the new samples into top_model and redraws with
 * top_view. No ranking or drawing here. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curses.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "engine/engine.h"
#include "lib/log.h"
#include "trace/probe_resolve.h"
#include "profile/profile.h"
#include "top/top_model.h"
#include "top/top_view.h"
#include "trace/trace_attach.h"
#include "lib/util.h"

/* Ring-buffer wait per loop turn: also the latency of a key press while sampling. */
#define POLL_MS 50
/* Key wait per loop turn once sampling has stopped. */
#define IDLE_KEY_MS 200
#define MIN_INTERVAL_MS 100
#define MAX_INTERVAL_MS 3600000

struct top_opts {
	uint64_t interval_ms;
	bool cumulative;
	struct probe_set probes; /* --probe: trace's probes instead of the sampler */
};

/* What the keys change. */
struct top_keys {
	enum top_sort sort;
	bool reverse, cumulative, quit;
	bool processes; /* rows are per process, so P can sort by it */
};

/* "comm (PID)" or "comm (PID, ns N, container ID)": comm, then the profile's tag. */
#define LABEL_SIZE (sizeof(((struct profile_process *)0)->comm) + PROFILE_TAG_SIZE)

/* What top_names reads: the profile's symbols, and a label per process index, made once
 * (a process keeps its comm and PID for its lifetime) when the process is first seen. */
struct names_ctx {
	const struct profile *prof;
	char (*labels)[LABEL_SIZE];
	size_t nlabels, labels_cap;
	char machine[SYMTAB_MAX_STR * 4 + 16]; /* the last native or kernel name, marked */
};

static void top_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk top [options] -p PID [-p PID...]\n"
		"       pywalk top [options] --all\n\n"
		"Show live, like top, the Python functions running processes spend CPU in:\n"
		"own%% (samples where the function is the leaf frame) and total%% (samples whose\n"
		"stack holds it, once per sample even when it recurses). Only stacks proven\n"
		"complete are counted; the header accounts for every sample.\n\n");
	cli_help_groups(f, CLI_SAMPLING | CLI_RATE, 0);
	fprintf(f,
		"View:\n"
		"  -i, --interval TIME    refresh every TIME: 1, 1s, 500ms (default 1s; 100ms-1h)\n"
		"      --cumulative       start with whole-run totals, not the last interval\n"
		"Probes:\n"
		"      --probe PROBE      count the hits of a probe (as pywalk trace takes them:\n"
		"                         tracepoint:, uprobe:, usdt:, software:, ...) instead\n"
		"                         of sampling; repeat for several; -F and -e then do\n"
		"                         nothing and the rate is hits per second\n");
	cli_help_other(f, 0);
	fprintf(f,
		"\nKeys:\n"
		"  o, 1, 3   sort by own samples (the default)\n"
		"  t, 2, 4   sort by total samples\n"
		"  n, 5      sort by function name\n"
		"  P, p      sort by process, then own samples (several processes)\n"
		"  r         reverse the order\n"
		"  c         switch between the last interval (default) and whole-run totals\n"
		"  arrows, PgUp, PgDn, Home, End   scroll\n"
		"  q         quit (Ctrl-C too)\n\n"
		"Columns: OWN%%, TOTAL%% (of all samples in the view), OWN and TOTAL (samples),\n"
		"FUNCTION (qualname) and FILE:LINE, the line where the function starts ('def').\n"
		"With several processes (--all, --subprocesses, more than one -p) a row is one\n"
		"function of one process, named in the PROCESS column as comm (PID).\n"
		"The header shows the sample rate of the last interval and the accounting:\n"
		"shipped, rejected (with the biggest reason), lost, empty, no thread state.\n"
		"Control characters in names are shown escaped (\\n, \\xNN, \\uXXXX).\n"
		"When every target has exited, sampling stops and the view switches to whole-run\n"
		"totals; it stays until q.\n\n"
		"Examples:\n"
		"    pywalk top -p 4242                  # live view of PID 4242\n"
		"    pywalk top -p 1,2 -F 499 -i 2s      # two processes, more samples, every 2 s\n"
		"    pywalk top --all                    # every Python process on the host\n"
		"    pywalk top -p 4242 --cumulative     # whole-run totals from the start\n"
		"    pywalk top -p 4242 --probe tracepoint:syscalls:sys_enter_openat\n"
		"                                        # who opens files, live\n\n"
		"Exit status: 0 ok (q or Ctrl-C), 1 runtime failure (also when stdout is not a\n"
		"terminal: use pywalk record), 2 usage error.\n");
}

enum { OPT_CUMULATIVE = 0x2000, OPT_PROBE };

static int handle_option(void *ctx, int opt, const char *arg)
{
	struct top_opts *o = ctx;

	switch (opt) {
	case 'i':
		if (parse_duration_ms(arg, &o->interval_ms) || o->interval_ms < MIN_INTERVAL_MS ||
		    o->interval_ms > MAX_INTERVAL_MS)
			return cli_usage_error(
				"top", "invalid interval '%s' (100ms-1h: 1, 2s, 500ms)", arg);
		return 0;
	case OPT_CUMULATIVE:
		o->cumulative = true;
		return 0;
	case OPT_PROBE: {
		char why[1024];

		if (probe_set_add(&o->probes, arg, why, sizeof(why)))
			return cli_usage_error("top", "%s", why);
		return 0;
	}
	}
	return 1;
}

/* --probe: attach the probes once the BPF side is loaded (engine_opts.attach). */
static int attach_probes(void *ctx, struct loader *ld)
{
	char why[1024];
	int err = trace_attach(ctx, ld, why, sizeof(why));

	if (err)
		pw_err("%s\n", why);
	return err;
}

/* "PID 4242 (python3)", "PIDs 1 (a), 2 (b)" or "all Python processes"; comm is untrusted,
 * the view escapes it. */
static void make_title(char *buf, size_t size, const struct cli_sampling *s,
		       const struct discover *d)
{
	size_t len, n = discover__nactive(d);

	if (s->all || s->subprocesses) {
		snprintf(buf, size, "%s", s->all ? "all Python processes" : "PIDs and descendants");
		return;
	}
	len = (size_t)snprintf(buf, size, "%s", n > 1 ? "PIDs " : "PID ");
	for (size_t i = 0; i < n && len < size; i++) {
		const struct target *t = discover__active(d, i);

		len += (size_t)snprintf(buf + len, size - len, "%s%d (%s)", i ? ", " : "", t->pid,
					t->comm);
	}
}

/* top_names over the profile: its symbol table, only read, and the labels */
static const char *names_func(void *ctx, uint32_t func)
{
	struct names_ctx *l = ctx;
	const struct symtab *st = profile__symtab(l->prof);
	enum frame_kind kind = symtab__func_kind(st, func);

	if (!frame_kind_is_machine(kind))
		return symtab__func_name(st, func);
	/* "do_syscall_64 [kernel]", as the other outputs mark it */
	snprintf(l->machine, sizeof(l->machine), "%s%s", symtab__func_name(st, func),
		 frame_kind_suffix(kind));
	return l->machine;
}

static const char *names_file(void *ctx, uint32_t func)
{
	const struct symtab *st = profile__symtab(((struct names_ctx *)ctx)->prof);
	const char *file = symtab__func_file(st, func);

	/* the kernel proper has no file: say where the function is */
	if (symtab__func_kind(st, func) == FRAME_KERNEL && !*file)
		return "[kernel]";
	return file;
}

static int names_line(void *ctx, uint32_t func)
{
	return symtab__func_firstline(profile__symtab(((struct names_ctx *)ctx)->prof), func);
}

static const char *names_process(void *ctx, uint32_t proc)
{
	const struct names_ctx *l = ctx;

	return proc < l->nlabels ? l->labels[proc] : "?";
}

/* Label the processes the profile gained since the last call; comm is untrusted and goes
 * as it is (the view escapes it). 0 or -ENOMEM. */
static int update_labels(struct names_ctx *l)
{
	size_t n = profile__nprocesses(l->prof);
	char tag[PROFILE_TAG_SIZE];
	int err;

	if (n <= l->nlabels)
		return 0;
	err = grow_array((void **)&l->labels, &l->labels_cap, n, sizeof(*l->labels));
	if (err)
		return err;
	for (; l->nlabels < n; l->nlabels++) {
		uint32_t proc = (uint32_t)l->nlabels;

		profile__process_tag(l->prof, proc, tag, sizeof(tag));
		snprintf(l->labels[proc], sizeof(*l->labels), "%s%s",
			 profile__process(l->prof, proc)->comm, tag);
	}
	return 0;
}

/* Apply a key; returns true when the view must be redrawn. */
static bool handle_key(struct top_keys *k, struct top_view *v, int ch)
{
	enum top_sort sort = k->sort;

	switch (ch) {
	case 'q':
	case 'Q':
		k->quit = true;
		return false;
	case 'o':
	case '1':
	case '3':
		sort = TOP_SORT_OWN;
		break;
	case 't':
	case '2':
	case '4':
		sort = TOP_SORT_TOTAL;
		break;
	case 'n':
	case '5':
		sort = TOP_SORT_NAME;
		break;
	case 'P':
	case 'p':
		/* one process: there is no process column to sort by */
		if (!k->processes)
			return false;
		sort = TOP_SORT_PROCESS;
		break;
	case 'r':
		k->reverse = !k->reverse;
		return true;
	case 'c':
		k->cumulative = !k->cumulative;
		return true;
	case KEY_UP:
	case 'k':
		top_view__scroll(v, -1);
		return true;
	case KEY_DOWN:
	case 'j':
		top_view__scroll(v, 1);
		return true;
	case KEY_PPAGE:
		top_view__scroll(v, -top_view__page_rows(v));
		return true;
	case KEY_NPAGE:
	case ' ':
		top_view__scroll(v, top_view__page_rows(v));
		return true;
	case KEY_HOME:
	case 'g':
		top_view__scroll(v, -LONG_MAX);
		return true;
	case KEY_END:
	case 'G':
		top_view__scroll(v, LONG_MAX);
		return true;
	case KEY_RESIZE:
		return true;
	default:
		return false;
	}
	/* a new sort key starts in its natural order, from the top */
	if (sort != k->sort) {
		k->sort = sort;
		k->reverse = false;
		top_view__scroll(v, -LONG_MAX);
	}
	return true;
}

static void fill_counters(struct top_status *st, const uint64_t counts[PW_OUT__COUNT],
			  const struct profile *prof)
{
	int worst;

	st->shipped = counts[PW_OUT_SHIPPED];
	st->rejected = engine_rejected(counts, &worst);
	st->worst = counts[worst];
	st->worst_label = engine_outcome_label(worst, true);
	st->lost = counts[PW_OUT_LOST];
	st->empty = counts[PW_OUT_EMPTY];
	st->no_tstate = counts[PW_OUT_NO_TSTATE];
	st->not_counted = profile__dropped(prof);
}

/* Rank for the current keys and redraw. 0 or -ENOMEM. */
static int draw(struct top_view *v, struct top_model *m, const struct top_keys *k,
		struct top_status *st, const struct top_names *names)
{
	const struct top_row *rows;
	size_t nrows;
	int n = top_model__rank(m, k->cumulative, k->sort, k->reverse, names);

	if (n < 0)
		return n;
	rows = top_model__rows(m, &nrows);
	st->samples = top_model__samples(m, k->cumulative);
	st->cumulative = k->cumulative;
	st->sort = k->sort;
	st->reverse = k->reverse;
	top_view__draw(v, st, rows, nrows, names);
	return 0;
}

struct top_run {
	struct top_opts o;
	struct top_keys keys;
	struct top_status st;
	struct top_model *model;
	struct top_view *view;
	struct top_names names;
	struct names_ctx labels;
	uint64_t start, last, next, interval_ns;
	bool sampling, redraw;
	char message[128], fail[512];
};

/* One interval's worth of samples into the model, and the header's figures. */
static int update(struct top_run *r, struct engine *e, uint64_t now)
{
	struct engine_counts c;
	int err = top_model__update(r->model, profile__agg(engine__profile(e)));

	if (!err)
		err = update_labels(&r->labels);
	if (!err)
		err = engine__read_counts(e, &c);
	if (err) {
		snprintf(r->fail, sizeof(r->fail), "cannot update the view: %s", strerror(-err));
		return err;
	}
	if (profile__counts_ns(engine__profile(e)))
		/* the walks of waiting threads, with the samples' in wall mode */
		for (int i = 0; i < PW_OUT__COUNT; i++)
			c.outcomes[i] += c.offcpu_outcomes[i];
	fill_counters(&r->st, c.outcomes, engine__profile(e));
	r->st.ns = profile__counts_ns(engine__profile(e));
	r->st.rate = top_model__samples(r->model, false) / ((now - r->last) / 1e9);
	r->st.elapsed_s = (now - r->start) / 1e9;
	r->last = now;
	r->next += r->interval_ns;
	if (r->next <= now)
		r->next = now + r->interval_ns;
	r->redraw = true;
	return 0;
}

/* Keys, the interval, the screen. 1 to stop (q), 0 to go on, or a negative errno. */
static int top_tick(void *ctx, struct engine *e, uint64_t now)
{
	struct top_run *r = ctx;
	int ch, err;

	while (!r->keys.quit && (ch = top_view__key(r->view, r->sampling ? 0 : IDLE_KEY_MS)) >= 0)
		r->redraw |= handle_key(&r->keys, r->view, ch);
	if (r->keys.quit)
		return 1;
	if (r->sampling && now >= r->next) {
		err = update(r, e, now);
		if (err)
			return err;
	}
	if (r->redraw) {
		err = draw(r->view, r->model, &r->keys, &r->st, &r->names);
		if (err) {
			snprintf(r->fail, sizeof(r->fail), "cannot update the view: %s",
				 strerror(-err));
			return err;
		}
		r->redraw = false;
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	static const struct option options[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "cumulative", no_argument, NULL, OPT_CUMULATIVE },
		{ "probe", required_argument, NULL, OPT_PROBE },
		{ 0 },
	};
	struct top_run r = { .o = { .interval_ms = 1000 },
			     .keys = { .sort = TOP_SORT_OWN },
			     .sampling = true,
			     .redraw = true };
	struct cli_spec spec = { .name = "top",
				 .groups = CLI_SAMPLING | CLI_RATE,
				 .options = options,
				 .shortopts = "i:",
				 .handle = handle_option,
				 .help = top_help,
				 .ctx = &r.o };
	struct engine_hook hook = { .tick = top_tick, .poll_ms = POLL_MS, .ctx = &r };
	struct cli_sampling s;
	struct engine *e = NULL;
	char why[512], title[256];
	int ret;

	ret = cli_parse(argc, argv, &spec, &s, NULL);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	r.keys.cumulative = r.o.cumulative;
	/* decided by what was asked, not by what runs now: --all may find one process first */
	r.keys.processes = s.all || s.subprocesses || s.npids > 1;
	r.st.processes = r.keys.processes;
	r.interval_ns = r.o.interval_ms * 1000000ull;

	if (!isatty(STDOUT_FILENO)) {
		pw_err("pywalk top needs a terminal; use pywalk record\n");
		return EXIT_FAIL;
	}
	e = engine__new(&(struct engine_opts){ .sampling = &s,
					       .no_sampler = r.o.probes.nprobes > 0,
					       .attach = r.o.probes.nprobes ? attach_probes : NULL,
					       .attach_ctx = &r.o.probes });
	if (!e)
		goto out;
	/* every probe found before the screen is taken and anything attached */
	if (r.o.probes.nprobes && probe_set_resolve(&r.o.probes, &s, why, sizeof(why))) {
		pw_err("%s\n", why);
		goto out;
	}
	r.model = top_model__new(r.keys.processes);
	if (!r.model) {
		pw_err("out of memory\n");
		goto out;
	}
	if (engine__start(e))
		goto out;
	if (engine__interrupted(e)) {
		ret = EXIT_OK;
		goto out;
	}
	/* wide characters need the locale's LC_CTYPE; numbers stay in the C locale */
	setlocale(LC_CTYPE, "");
	r.view = top_view__new(why, sizeof(why));
	if (!r.view) {
		pw_err("%s\n", why);
		goto out;
	}
	r.labels.prof = engine__profile(e);
	r.names = (struct top_names){ .name = names_func,
				      .file = names_file,
				      .line = names_line,
				      .process = names_process,
				      .ctx = &r.labels };
	make_title(title, sizeof(title), &s, engine__discover(e));
	r.st.title = title;
	r.st.interval_s = r.o.interval_ms / 1000.0;
	r.start = r.last = now_ns();
	r.next = r.start + r.interval_ns;

	if (engine__run(e, &hook) < 0)
		goto out;
	if (!r.keys.quit && !engine__interrupted(e)) {
		/* every target exited: detach, take what is left in the ring buffer (the
		 * counters shown from now on agree with the records), and stay until q */
		r.sampling = false;
		if (engine__finish(e) || update(&r, e, now_ns()))
			goto out;
		r.keys.cumulative = true;
		snprintf(r.message, sizeof(r.message),
			 "%s exited: sampling stopped, whole-run totals shown (c toggles); q quits",
			 s.npids > 1 ? "all targets" : "the target");
		r.st.message = r.message;
		r.redraw = true;
		while (!r.keys.quit && !engine__interrupted(e))
			if (top_tick(&r, e, now_ns()) < 0)
				goto out;
	}
	ret = EXIT_OK;
out:
	/* the terminal first, so an error is printed on a normal screen */
	top_view__free(r.view);
	if (r.fail[0])
		pw_err("%s\n", r.fail);
	engine__free(e);
	probe_set_free(&r.o.probes);
	top_model__free(r.model);
	free(r.labels.labels);
	return ret;
}
