// SPDX-License-Identifier: MIT
/* `pywalk top`: a live, top-like view of the functions running Python processes spend CPU
 * in. Parses options, sets up targets and the loader as record does (session.h), then
 * alternates between reading samples, reading keys and, once per interval, folding the new
 * samples into top_model and redrawing with top_view. No ranking or drawing here. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curses.h>

#include "cmd.h"
#include "loader.h"
#include "log.h"
#include "preflight.h"
#include "proc.h"
#include "profile.h"
#include "session.h"
#include "top_model.h"
#include "top_view.h"
#include "util.h"

/* Ring-buffer wait per loop turn: also the latency of a key press while sampling. */
#define POLL_MS 50
/* Key wait per loop turn once sampling has stopped. */
#define IDLE_KEY_MS 200
#define MIN_INTERVAL_MS 100
#define MAX_INTERVAL_MS 3600000

struct top_opts {
	pid_t pids[SESSION_MAX_PIDS];
	size_t npids;
	uint32_t frequency_hz;
	uint64_t interval_ms;
	const char *event;
	uint32_t max_depth;
	bool cumulative;
};

/* What the keys change. */
struct top_keys {
	enum top_sort sort;
	bool reverse, cumulative, quit;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void top_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk top [options] -p PID [-p PID...]\n\n"
		"Show live, like top, the Python functions running processes spend CPU in:\n"
		"own%% (samples where the function is the leaf frame) and total%% (samples whose\n"
		"stack holds it, once per sample even when it recurses). Only stacks proven\n"
		"complete are counted; the header accounts for every sample.\n\n"
		"Options:\n"
		"  -p, --pid PID          process to watch (repeat, or PID,PID,...)\n"
		"  -F, --frequency HZ     samples per second per CPU (default 99; -r, --rate too)\n"
		"  -i, --interval TIME    refresh every TIME: 1, 1s, 500ms (default 1s; 100ms-1h)\n"
		"      --cumulative       start with whole-run totals, not the last interval\n"
		"      --max-depth N      longest stack kept, 1-%d Python frames (default %d);\n"
		"                         deeper stacks are rejected and counted, never cut\n"
		"  -e, --event EVENT      perf event: cpu-clock (default), task-clock, cycles\n"
		"  -v, --verbose          more diagnostics before the view starts (-vv: libbpf's)\n"
		"  -h, --help             this text\n\n"
		"Keys:\n"
		"  o, 1, 3   sort by own samples (the default)\n"
		"  t, 2, 4   sort by total samples\n"
		"  n, 5      sort by function name\n"
		"  r         reverse the order\n"
		"  c         switch between the last interval (default) and whole-run totals\n"
		"  arrows, PgUp, PgDn, Home, End   scroll\n"
		"  q         quit (Ctrl-C too)\n\n"
		"Columns: OWN%%, TOTAL%% (of all samples in the view), OWN and TOTAL (samples),\n"
		"FUNCTION (qualname) and FILE:LINE, the line where the function starts ('def').\n"
		"The header shows the sample rate of the last interval and the accounting:\n"
		"shipped, rejected (with the biggest reason), lost, empty, no thread state.\n"
		"Control characters in names are shown escaped (\\n, \\xNN, \\uXXXX).\n"
		"When every target has exited, sampling stops and the view switches to whole-run\n"
		"totals; it stays until q.\n\n"
		"Examples:\n"
		"    pywalk top -p 4242                  # live view of PID 4242\n"
		"    pywalk top -p 1,2 -F 499 -i 2s      # two processes, more samples, every 2 s\n"
		"    pywalk top -p 4242 --cumulative     # whole-run totals from the start\n\n"
		"Exit status: 0 ok (q or Ctrl-C), 1 runtime failure (also when stdout is not a\n"
		"terminal: use pywalk record), 2 usage error.\n",
		PW_MAX_FRAMES_CAP, PW_DEFAULT_MAX_DEPTH);
}

static int usage_error(const char *fmt, const char *arg)
{
	return cmd_usage_error("top", fmt, arg);
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(int argc, char **argv, struct top_opts *o)
{
	enum { OPT_MAX_DEPTH = 256, OPT_CUMULATIVE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "rate", required_argument, NULL, 'r' },
		{ "interval", required_argument, NULL, 'i' },
		{ "event", required_argument, NULL, 'e' },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "cumulative", no_argument, NULL, OPT_CUMULATIVE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	o->frequency_hz = 99;
	o->max_depth = PW_DEFAULT_MAX_DEPTH;
	o->interval_ms = 1000;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:p:F:r:i:e:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (session_add_pids(o->pids, &o->npids, optarg))
				return usage_error("invalid PID list '%s'", optarg);
			break;
		case 'F':
		case 'r':
			if (parse_u32(optarg, 1, 100000, &o->frequency_hz))
				return usage_error("invalid frequency '%s' (1-100000 Hz)", optarg);
			break;
		case 'i':
			if (parse_duration_ms(optarg, &o->interval_ms) ||
			    o->interval_ms < MIN_INTERVAL_MS || o->interval_ms > MAX_INTERVAL_MS)
				return usage_error("invalid interval '%s' (100ms-1h: 1, 2s, 500ms)",
						   optarg);
			break;
		case 'e':
			o->event = optarg;
			break;
		case OPT_MAX_DEPTH:
			if (parse_u32(optarg, 1, PW_MAX_FRAMES_CAP, &o->max_depth))
				return usage_error("invalid --max-depth '%s' (1-4096)", optarg);
			break;
		case OPT_CUMULATIVE:
			o->cumulative = true;
			break;
		case 'v':
			log_level = log_level < LOG_DEBUG ? LOG_DEBUG : LOG_LIBBPF;
			break;
		case 'h':
			top_help(stdout);
			return EXIT_OK;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s' (top watches running processes: "
				   "-p PID)",
				   argv[optind]);
	if (!o->npids)
		return usage_error("%s", "nothing to watch: give -p PID");
	return -1;
}

static int on_sample(void *ctx, const void *data, size_t size)
{
	return profile__add_record(ctx, data, size);
}

/* top_names over the profile's symbol table; ctx is the symtab, only read */
static const char *names_func(void *ctx, uint32_t func)
{
	return symtab__func_name(ctx, func);
}

static const char *names_file(void *ctx, uint32_t func)
{
	return symtab__func_file(ctx, func);
}

static int names_line(void *ctx, uint32_t func)
{
	return symtab__func_firstline(ctx, func);
}

/* "PID 4242 (python3)" or "PIDs 1 (a), 2 (b)"; comm is untrusted, the view escapes it. */
static void make_title(char *buf, size_t size, const struct target *t, size_t n)
{
	size_t len = (size_t)snprintf(buf, size, "%s", n > 1 ? "PIDs " : "PID ");

	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%d (%s)", i ? ", " : "",
					t[i].pid, t[i].comm);
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

/* Untrack targets that exited since the last look; returns how many still run. */
static size_t note_exits(struct loader *ld, const struct target *t, bool *gone, size_t n)
{
	size_t alive = 0;

	for (size_t i = 0; i < n; i++) {
		if (!gone[i] && !proc_is_alive(t[i].pid)) {
			gone[i] = true;
			/* its PID may be reused: the BPF side must not sample a stranger */
			loader__remove_process(ld, t[i].pid);
		}
		alive += !gone[i];
	}
	return alive;
}

static void fill_counters(struct top_status *st, const uint64_t counts[PW_OUT__COUNT],
			  const struct profile *prof)
{
	int worst;

	st->shipped = counts[PW_OUT_SHIPPED];
	st->rejected = session_rejected(counts, &worst);
	st->worst = counts[worst];
	st->worst_label = session_outcome_label(worst, true);
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

int cmd_top(int argc, char **argv)
{
	struct top_opts o = { 0 };
	struct top_keys keys = { .sort = TOP_SORT_OWN };
	struct top_status st = { 0 };
	struct target *targets = NULL;
	struct profile *prof = NULL;
	struct loader *ld = NULL;
	struct top_model *model = NULL;
	struct top_view *view = NULL;
	struct top_names names;
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t counts[PW_OUT__COUNT] = { 0 }, runs, start, last, next, interval_ns;
	char why[512] = "", fail[512] = "", title[256], message[128];
	bool *gone = NULL, sampling = true, redraw = true;
	int ret, err;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;
	keys.cumulative = o.cumulative;
	interval_ns = o.interval_ms * 1000000ull;

	if (!isatty(STDOUT_FILENO)) {
		pw_err("pywalk top needs a terminal; use pywalk record\n");
		return EXIT_FAIL;
	}
	if (preflight_check(why, sizeof(why))) {
		pw_err("%s\n", why);
		return EXIT_FAIL;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	targets = calloc(o.npids, sizeof(*targets));
	gone = calloc(o.npids, sizeof(*gone));
	prof = profile__new(&(struct profile_opts){ 0 });
	model = top_model__new();
	if (!targets || !gone || !prof || !model) {
		pw_err("out of memory\n");
		goto out;
	}
	if (session_open_pids(o.pids, o.npids, targets))
		goto out;
	log_hook_libbpf();
	ld = loader__open(&(struct loader_opts){ .frequency_hz = o.frequency_hz,
						 .max_depth = o.max_depth,
						 .event = o.event,
						 .on_sample = on_sample,
						 .ctx = prof },
			  why, sizeof(why));
	if (!ld) {
		pw_err("%s\n", why);
		goto out;
	}
	if (session_track(prof, ld, targets, o.npids))
		goto out;
	if (stop_requested) {
		ret = EXIT_OK;
		goto out;
	}

	/* wide characters need the locale's LC_CTYPE; numbers stay in the C locale */
	setlocale(LC_CTYPE, "");
	view = top_view__new(why, sizeof(why));
	if (!view) {
		pw_err("%s\n", why);
		goto out;
	}
	names = (struct top_names){ .name = names_func,
				    .file = names_file,
				    .line = names_line,
				    .ctx = (void *)profile__symtab(prof) };
	make_title(title, sizeof(title), targets, o.npids);
	st.title = title;
	st.interval_s = o.interval_ms / 1000.0;
	start = last = now_ns();
	next = start + interval_ns;

	while (!stop_requested && !keys.quit) {
		uint64_t now;
		int ch;

		if (sampling) {
			err = loader__poll(ld, POLL_MS);
			if (err < 0) {
				snprintf(fail, sizeof(fail), "reading samples failed: %s",
					 strerror(-err));
				goto out;
			}
		}
		while (!keys.quit && (ch = top_view__key(view, sampling ? 0 : IDLE_KEY_MS)) >= 0)
			redraw |= handle_key(&keys, view, ch);

		now = now_ns();
		if (sampling && now >= next) {
			size_t alive = note_exits(ld, targets, gone, o.npids);

			if (!alive) {
				/* detach, then take what is left in the ring buffer: the
				 * counters shown from now on agree with the records */
				sampling = false;
				loader__stop(ld);
				loader__drain(ld);
				keys.cumulative = true;
				snprintf(message, sizeof(message),
					 "%s exited: sampling stopped, whole-run totals shown "
					 "(c toggles); q quits",
					 o.npids > 1 ? "all targets" : "the target");
				st.message = message;
			} else if (alive < o.npids) {
				snprintf(message, sizeof(message),
					 "%zu of %zu targets exited; q quits", o.npids - alive,
					 o.npids);
				st.message = message;
			}
			err = top_model__update(model, profile__agg(prof));
			if (!err)
				err = loader__read_outcomes(ld, counts, &runs);
			if (err) {
				snprintf(fail, sizeof(fail), "cannot update the view: %s",
					 strerror(-err));
				goto out;
			}
			fill_counters(&st, counts, prof);
			st.rate = top_model__samples(model, false) / ((now - last) / 1e9);
			st.elapsed_s = (now - start) / 1e9;
			last = now;
			next += interval_ns;
			if (next <= now)
				next = now + interval_ns;
			redraw = true;
		}
		if (redraw) {
			err = draw(view, model, &keys, &st, &names);
			if (err) {
				snprintf(fail, sizeof(fail), "cannot update the view: %s",
					 strerror(-err));
				goto out;
			}
			redraw = false;
		}
	}
	ret = EXIT_OK;
out:
	/* the terminal first, so an error is printed on a normal screen */
	top_view__free(view);
	if (fail[0])
		pw_err("%s\n", fail);
	loader__free(ld);
	top_model__free(model);
	profile__free(prof);
	free(gone);
	free(targets);
	return ret;
}
