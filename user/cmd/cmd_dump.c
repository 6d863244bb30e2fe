// SPDX-License-Identifier: MIT
/* `pywalk dump`: every thread's Python stack, now, like py-spy dump: where a hung process
 * is stuck. Text (leaf first, the way a stuck thread is read) or JSON. dump.c pauses the
 * process and walks; here are the options and the output. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "pystate/dump.h"
#include "engine/engine.h"
#include "lib/escape.h"
#include "lib/json.h"
#include "lib/log.h"
#include "symbolize/symtab.h"
#include "lib/util.h"

enum { OPT_JSON = 0x2000, OPT_NONBLOCKING, OPT_MAX_DEPTH, OPT_ASYNC };

struct dump_cli {
	pid_t pids[CLI_MAX_PIDS];
	size_t npids;
	bool json;
	struct dump_opts o;
};

static const struct option dump_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "nonblocking", no_argument, NULL, OPT_NONBLOCKING },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ 0 },
};

static void dump_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk dump [options] -p PID[,PID...]\n\n"
		"Print every thread's Python stack of each process, now: the innermost call first,\n"
		"with each thread's state and the kernel function it waits in. The process is\n"
		"paused (ptrace, no signal it can see) for the moment its thread states are read,\n"
		"so every stack is one of the same instant, proven complete like a sample's.\n\n"
		"Options:\n"
		"  -p, --pid PID          process to dump (repeat, or PID,PID,...)\n"
		"      --json             one JSON document: processes, threads, frames\n"
		"      --nonblocking      do not pause: a stack that moves while it is read is\n"
		"                         read again (up to 20 times), else shown as rejected\n"
		"      --max-depth N      longest stack shown, 1-4096 frames (default %d)\n"
		"      --async            also every asyncio task (Python 3.14+), running or\n"
		"                         suspended: its name, the tasks that await it and its\n"
		"                         coroutine frames, innermost first\n",
		PW_DEFAULT_MAX_DEPTH);
	cli_help_other(f, 0);
	fprintf(f, "\nExamples:\n"
		   "    pywalk dump -p 4242\n"
		   "    pywalk dump -p 4242 --json | jq '.processes[0].threads[].frames[0]'\n"
		   "    pywalk dump --async -p 4242\n\n"
		   "Exit status: 0 every process dumped, 1 one could not be, 2 usage error (or\n"
		   "--async for a Python before 3.14).\n");
}

#define dump_usage(...) cli_usage_error("dump", __VA_ARGS__)

static int handle_option(void *ctx, int opt, const char *arg)
{
	struct dump_cli *c = ctx;

	switch (opt) {
	case 'p': {
		char *copy = strdup(arg), *save = NULL;

		if (!copy)
			return EXIT_FAIL;
		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			uint32_t pid;

			if (parse_u32(tok, 1, 0x3fffffff, &pid) || c->npids == CLI_MAX_PIDS) {
				free(copy);
				return dump_usage("invalid PID list '%s'", arg);
			}
			c->pids[c->npids++] = (pid_t)pid;
		}
		free(copy);
		return 0;
	}
	case OPT_JSON:
		c->json = true;
		return 0;
	case OPT_NONBLOCKING:
		c->o.nonblocking = true;
		return 0;
	case OPT_ASYNC:
		c->o.async = true;
		return 0;
	case OPT_MAX_DEPTH:
		if (parse_u32(arg, 1, PW_MAX_FRAMES_CAP, &c->o.max_depth))
			return dump_usage("invalid --max-depth '%s' (1-4096)", arg);
		return 0;
	}
	return 1;
}

static const char *state_words(char s)
{
	switch (s) {
	case 'R':
		return "running";
	case 'S':
		return "sleeping";
	case 'D':
		return "waiting for I/O";
	case 'T':
	case 't':
		return "stopped";
	case 'Z':
		return "zombie";
	default:
		return "state unknown";
	}
}

struct frame_text {
	const char *name, *file;
	int line;
};

/* Name, file and line of frame f; false for a shim frame (not shown). */
static bool frame_text(struct symtab *st, const struct symtab_target *stt, const struct pw_frame *f,
		       struct frame_text *out)
{
	int64_t sym = symtab__resolve(st, stt, f->code, f->tag);
	uint32_t func;

	if (sym < 0) {
		*out = (struct frame_text){ "<unknown code object>", "?", 0 };
		return true;
	}
	if (symtab__is_shim(st, sym))
		return false;
	func = symtab__func(st, sym);
	*out = (struct frame_text){ symtab__func_name(st, func), symtab__func_file(st, func),
				    symtab__line(st, sym, f->instr) };
	return true;
}

/* Why some or all Python thread names are missing, for the user; "" when none are. */
static const char *names_problem(const struct dump *d, char *buf, size_t size)
{
	if (d->names_err == -ENOENT)
		snprintf(buf, size, "none: the threading module is not imported");
	else if (d->names_err)
		snprintf(buf, size, "cannot be read: %s", strerror(-d->names_err));
	else if (d->names.unreadable)
		snprintf(buf, size, "%zu of %zu could not be read", d->names.unreadable,
			 d->names.nthreads);
	else
		buf[0] = 0;
	return buf;
}

/* Tasks by address, to name a task's awaiters. */
struct task_index {
	uint64_t addr;
	size_t i;
};

static int index_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct task_index *)a)->addr, y = ((const struct task_index *)b)->addr;

	return x < y ? -1 : x > y;
}

static struct task_index *index_tasks(const struct async_tasks *a)
{
	struct task_index *ix = calloc(a->ntasks ? a->ntasks : 1, sizeof(*ix));

	if (!ix)
		return NULL;
	for (size_t i = 0; i < a->ntasks; i++)
		ix[i] = (struct task_index){ a->tasks[i].addr, i };
	qsort(ix, a->ntasks, sizeof(*ix), index_cmp);
	return ix;
}

static const struct async_task *task_at(const struct async_tasks *a, const struct task_index *ix,
					uint64_t addr)
{
	struct task_index key = { addr, 0 };
	const struct task_index *hit = bsearch(&key, ix, a->ntasks, sizeof(*ix), index_cmp);

	return hit ? &a->tasks[hit->i] : NULL;
}

/* Host tid of the thread whose native id the task list was found under (0: none). */
static pid_t task_tid(const struct dump *d, const struct async_task *k)
{
	for (size_t i = 0; k->thread_id && i < d->nthreads; i++)
		if (d->threads[i].thread_id == k->thread_id)
			return d->threads[i].tid;
	return 0;
}

static const char *task_name(const struct async_task *k)
{
	return k->name_unreadable ? "?" : k->name;
}

/* Why no task is shown, or how many are; "" when all were read. */
static void async_summary(const struct async_tasks *a, char *buf, size_t size)
{
	buf[0] = 0;
	if (a->status == ASYNC_NOT_IMPORTED)
		snprintf(buf, size, "no tasks: the program has not imported asyncio");
	else if (a->status != ASYNC_OK)
		snprintf(buf, size, "no tasks: %s", a->why);
	else if (a->list_cut)
		snprintf(buf, size,
			 "a task list did not end within %u tasks or pywalk's read budget: %zu "
			 "listed, the first %zu shown",
			 ASYNC_MAX_LISTED, a->listed, a->ntasks);
	else if (a->listed > a->ntasks + a->unreadable)
		snprintf(buf, size,
			 "%zu tasks listed, the first %zu shown (pywalk reads at most %u)",
			 a->listed, a->ntasks, ASYNC_MAX_TASKS);
	else if (a->unreadable)
		snprintf(buf, size, "%zu of %zu tasks could not be read", a->unreadable, a->listed);
}

/* Frames, innermost first, one line each: "    name (file:line)". */
static int text_frames(struct strbuf *sb, struct symtab *st, const struct symtab_target *stt,
		       const struct pw_frame *frames, uint32_t n)
{
	int err = 0;

	for (uint32_t j = 0; j < n && !err; j++) {
		struct frame_text ft;

		if (!frame_text(st, stt, &frames[j], &ft))
			continue;
		err = strbuf_add(sb, "    ", 4);
		if (!err)
			err = escape_folded(sb, ft.name);
		if (!err)
			err = strbuf_add(sb, " (", 2);
		if (!err)
			err = escape_folded(sb, ft.file);
		if (!err)
			err = strbuf_addf(sb, ":%d)\n", ft.line);
	}
	return err;
}

/* `"key":"value"` */
static void json_str(struct json *w, const char *key, const char *v)
{
	json_key_string(w, key, v);
}

/* Frames as the members of a JSON array: {"function", "file", "line"}. */
static void json_frames(struct json *w, struct symtab *st, const struct symtab_target *stt,
			const struct pw_frame *frames, uint32_t n)
{
	for (uint32_t j = 0; j < n && !json_error(w); j++) {
		struct frame_text ft;

		if (!frame_text(st, stt, &frames[j], &ft))
			continue;
		json_begin_object(w);
		json_str(w, "function", ft.name);
		json_str(w, "file", ft.file);
		json_key_int(w, "line", ft.line);
		json_end_object(w);
	}
}

static int print_async_text(struct strbuf *sb, struct symtab *st, const struct symtab_target *stt,
			    const struct dump *d)
{
	const struct async_tasks *a = &d->aio;
	struct task_index *ix;
	char why[640];
	int err;

	async_summary(a, why, sizeof(why));
	err = strbuf_addf(sb, "\nasyncio: %zu task%s", a->ntasks, a->ntasks == 1 ? "" : "s");
	if (!err && why[0]) {
		err = strbuf_add(sb, " (", 2);
		if (!err)
			err = escape_folded(sb, why);
		if (!err)
			err = strbuf_add(sb, ")", 1);
	}
	if (!err)
		err = strbuf_add(sb, a->ntasks ? ":\n" : "\n", a->ntasks ? 2 : 1);
	if (!err && a->tables_rejected && a->status == ASYNC_OK)
		err = strbuf_addf(sb, "(%u asyncio table%s with impossible sizes rejected)\n",
				  a->tables_rejected, a->tables_rejected == 1 ? "" : "s");
	if (err || !a->ntasks)
		return err;
	ix = index_tasks(a);
	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < a->ntasks && !err; i++) {
		const struct async_task *k = &a->tasks[i];
		pid_t tid = task_tid(d, k);

		err = strbuf_addf(sb, "\nTask 0x%llx \"", (unsigned long long)k->addr);
		if (!err)
			err = escape_folded(sb, task_name(k));
		if (!err && tid)
			err = strbuf_addf(sb, "\" (thread %d%s)", tid,
					  k->running ? ", running" : "");
		else if (!err)
			err = strbuf_addf(sb, "\" (%s)",
					  k->thread_id ? "thread unknown" : "of an exited thread");
		for (uint32_t j = 0; j < k->nawaiters && !err; j++) {
			const struct async_task *p = task_at(a, ix, k->awaiters[j]);

			err = strbuf_addf(sb, "%s0x%llx", j ? ", " : ", awaited by ",
					  (unsigned long long)k->awaiters[j]);
			if (!err && p) {
				err = strbuf_add(sb, " \"", 2);
				if (!err)
					err = escape_folded(sb, task_name(p));
				if (!err)
					err = strbuf_add(sb, "\"", 1);
			}
		}
		if (!err && k->awaiters_cut)
			err = strbuf_addf(sb, " and %u more", k->awaiters_cut);
		if (!err && k->awaiters_unreadable)
			err = strbuf_addf(sb, " (its awaiters could not be read)");
		if (!err)
			err = strbuf_add(sb, ":\n", 2);
		if (!err)
			err = text_frames(sb, st, stt, k->frames, k->nframes);
		if (!err && k->frames_cut)
			err = strbuf_addf(sb,
					  "    (more coroutine frames not shown: --max-depth)\n");
		if (!err && k->frames_unreadable)
			err = strbuf_addf(
				sb, "    (the rest of its coroutine chain could not be read)\n");
	}
	free(ix);
	return err;
}

/* `"key":"0x..."`: an address, as a string since JSON numbers lose 64-bit precision */
static void json_addr(struct json *w, const char *key, uint64_t addr)
{
	if (key)
		json_key(w, key);
	json_string_begin(w);
	json_string_partf(w, "0x%llx", (unsigned long long)addr);
	json_string_end(w);
}

static void print_async_json(struct json *w, struct symtab *st, const struct symtab_target *stt,
			     const struct dump *d)
{
	static const char *const status[] = { [ASYNC_OK] = "ok",
					      [ASYNC_UNSUPPORTED] = "unsupported",
					      [ASYNC_NOT_IMPORTED] = "not imported",
					      [ASYNC_BAD_TABLE] = "bad table",
					      [ASYNC_UNREADABLE] = "unreadable" };
	const struct async_tasks *a = &d->aio;

	json_key(w, "asyncio");
	json_begin_object(w);
	json_str(w, "status", status[a->status]);
	if (a->status != ASYNC_OK && a->status != ASYNC_NOT_IMPORTED)
		json_str(w, "error", a->why);
	json_str(w, "table", a->table_file);
	json_key_uint(w, "tables_rejected", a->tables_rejected);
	json_key_uint(w, "listed", a->listed);
	json_key_bool(w, "list_cut", a->list_cut);
	json_key_uint(w, "unreadable", a->unreadable);
	json_key(w, "tasks");
	json_begin_array(w);
	for (size_t i = 0; i < a->ntasks && !json_error(w); i++) {
		const struct async_task *k = &a->tasks[i];

		json_begin_object(w);
		json_addr(w, "id", k->addr);
		json_key(w, "name");
		if (!k->name_unreadable)
			json_string(w, k->name);
		else
			json_null(w);
		json_key_int(w, "thread", task_tid(d, k));
		json_key_bool(w, "running", k->running);
		json_key(w, "awaited_by");
		json_begin_array(w);
		for (uint32_t j = 0; j < k->nawaiters; j++)
			json_addr(w, NULL, k->awaiters[j]);
		json_end_array(w);
		json_key_uint(w, "awaiters_cut", k->awaiters_cut);
		json_key_bool(w, "frames_cut", k->frames_cut);
		json_key_bool(w, "frames_unreadable", k->frames_unreadable);
		json_key(w, "frames");
		json_begin_array(w);
		json_frames(w, st, stt, k->frames, k->nframes);
		json_end_array(w);
		json_end_object(w);
	}
	json_end_array(w);
	json_end_object(w);
}

static int print_text(struct strbuf *sb, struct symtab *st, const struct dump *d)
{
	struct symtab_target stt = {
		.id = 1, .pid = d->t.pid, .code_type = d->t.code_type, .lay = &d->t.ver.obj
	};
	char ver[16], why[96];
	int err;

	err = strbuf_addf(sb, "Process %d (", d->t.pid);
	if (!err)
		err = escape_folded(sb, d->t.comm);
	if (!err)
		err = strbuf_addf(sb, "), CPython %s, %zu thread%s%s:\n",
				  py_version_str(&d->t.ver, ver, sizeof(ver)), d->nthreads,
				  d->nthreads == 1 ? "" : "s", d->paused ? "" : " (not paused)");
	if (!err && (d->names_err || d->names.unreadable))
		err = strbuf_addf(sb, "(Python thread names: %s)\n",
				  names_problem(d, why, sizeof(why)));
	for (size_t i = 0; i < d->nthreads && !err; i++) {
		const struct dump_thread *t = &d->threads[i];

		if (t->tid)
			err = strbuf_addf(sb, "\nThread %d \"", t->tid);
		else
			err = strbuf_addf(sb, "\nThread 0x%llx \"",
					  (unsigned long long)t->thread_id);
		if (!err)
			err = escape_folded(sb, t->name[0] ? t->name : "?");
		if (!err && t->pyname[0]) {
			err = strbuf_add(sb, "\", Python \"", 11);
			if (!err)
				err = escape_folded(sb, t->pyname);
		}
		if (!err)
			err = strbuf_addf(sb, "\" (%s%s%s%s)%s\n", state_words(t->state),
					  t->wchan[0] ? " in " : "", t->wchan,
					  (t->gil & PW_SF_GIL_HELD) ? ", holds the GIL" : "",
					  t->outcome == PW_OUT_SHIPPED ? ":" : "");
		if (!err && t->moved)
			err = strbuf_addf(sb,
					  "    (no stack: it ran while it was read; without "
					  "--nonblocking the process is paused for the read)\n");
		else if (!err && t->outcome != PW_OUT_SHIPPED)
			err = strbuf_addf(sb, "    (no stack: %s)\n",
					  engine_outcome_label(t->outcome, false));
		if (!err && t->outcome == PW_OUT_SHIPPED)
			err = text_frames(sb, st, &stt, t->frames, t->nframes);
	}
	if (!err && d->async_read)
		err = print_async_text(sb, st, &stt, d);
	return err;
}

/* One process's object; the first error is the writer's. */
static void print_json(struct json *w, struct symtab *st, const struct dump *d)
{
	struct symtab_target stt = {
		.id = 1, .pid = d->t.pid, .code_type = d->t.code_type, .lay = &d->t.ver.obj
	};
	char ver[32], why[96], state[2] = { 0 };

	py_version_str(&d->t.ver, ver, sizeof(ver));
	json_begin_object(w);
	json_key_int(w, "pid", d->t.pid);
	json_str(w, "comm", d->t.comm);
	json_str(w, "python", ver);
	json_key_bool(w, "paused", d->paused);
	json_key(w, "python_names");
	json_begin_object(w);
	json_key_uint(w, "threads", d->names.nthreads);
	json_key_uint(w, "named", d->names.named);
	json_key_uint(w, "unreadable", d->names.unreadable);
	if (d->names_err)
		json_str(w, "error", names_problem(d, why, sizeof(why)));
	json_end_object(w);
	json_key(w, "threads");
	json_begin_array(w);
	for (size_t i = 0; i < d->nthreads && !json_error(w); i++) {
		const struct dump_thread *t = &d->threads[i];

		state[0] = t->state ? t->state : '?';
		json_begin_object(w);
		json_key_int(w, "tid", t->tid);
		json_key_uint(w, "thread_id", t->thread_id);
		json_str(w, "name", t->name);
		/* null: threading does not name it (or its name could not be read) */
		json_key(w, "python_name");
		if (t->pyname[0])
			json_string(w, t->pyname);
		else
			json_null(w);
		json_str(w, "state", state);
		json_str(w, "wchan", t->wchan);
		/* null: its Python does not tell */
		json_key(w, "holds_gil");
		if (!(t->gil & PW_SF_GIL_KNOWN))
			json_null(w);
		else
			json_bool(w, t->gil & PW_SF_GIL_HELD);
		json_str(w, "status",
			 t->outcome == PW_OUT_SHIPPED ? "ok"
			 : t->moved		      ? "ran while read"
						      : engine_outcome_label(t->outcome, false));
		json_key(w, "frames");
		json_begin_array(w);
		if (t->outcome == PW_OUT_SHIPPED)
			json_frames(w, st, &stt, t->frames, t->nframes);
		json_end_array(w);
		json_end_object(w);
	}
	json_end_array(w);
	if (d->async_read)
		print_async_json(w, st, &stt, d);
	json_end_object(w);
}

int cmd_dump(int argc, char **argv)
{
	struct dump_cli c = { 0 };
	struct cli_spec spec = { .name = "dump",
				 .options = dump_options,
				 .shortopts = "p:",
				 .handle = handle_option,
				 .help = dump_help,
				 .ctx = &c };
	struct symtab *st;
	struct strbuf sb = { 0 };
	struct json w;
	int r, ret = EXIT_OK;

	r = cli_parse(argc, argv, &spec, NULL, NULL);
	if (r >= 0)
		return r;
	if (!c.npids)
		return dump_usage("%s", "give the process to dump: -p PID");
	st = symtab__new(0);
	if (!st) {
		pw_err("out of memory\n");
		return EXIT_FAIL;
	}
	json_init(&w, &sb, false);
	if (c.json) {
		json_begin_object(&w);
		json_key(&w, "processes");
		json_begin_array(&w);
	}
	for (size_t i = 0; i < c.npids; i++) {
		struct dump d;
		char why[512] = "";
		int err = dump_process(c.pids[i], &c.o, &d, why, sizeof(why));

		if (err) {
			pw_err("%s\n", why[0] ? why : strerror(-err));
			ret = d.async_refused ? EXIT_USAGE : ret == EXIT_USAGE ? ret : EXIT_FAIL;
			dump_free(&d);
			continue;
		}
		if (c.json) {
			print_json(&w, st, &d);
			err = json_error(&w);
		} else {
			if (sb.len)
				strbuf_add(&sb, "\n", 1);
			err = print_text(&sb, st, &d);
		}
		symtab__forget_target(st, 1);
		dump_free(&d);
		if (err) {
			pw_err("out of memory\n");
			ret = EXIT_FAIL;
			break;
		}
	}
	if (c.json) {
		json_end_array(&w);
		json_end_object(&w);
		json_break(&w);
		if (json_finish(&w))
			ret = EXIT_FAIL;
	}
	if (sb.len && fwrite(sb.buf, 1, sb.len, stdout) != sb.len)
		ret = EXIT_FAIL;
	if (fflush(stdout))
		ret = EXIT_FAIL;
	strbuf_free(&sb);
	symtab__free(st);
	return ret;
}
