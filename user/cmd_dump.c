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

#include "cli.h"
#include "cmd.h"
#include "dump.h"
#include "engine.h"
#include "escape.h"
#include "log.h"
#include "symtab.h"
#include "util.h"

enum { OPT_JSON = 0x2000, OPT_NONBLOCKING, OPT_MAX_DEPTH };

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
		"      --max-depth N      longest stack shown, 1-4096 frames (default %d)\n",
		PW_DEFAULT_MAX_DEPTH);
	cli_help_other(f, 0);
	fprintf(f,
		"\nExamples:\n"
		"    pywalk dump -p 4242\n"
		"    pywalk dump -p 4242 --json | jq '.processes[0].threads[].frames[0]'\n\n"
		"Exit status: 0 every process dumped, 1 one could not be, 2 usage error.\n");
}

static int dump_usage(const char *fmt, const char *arg)
{
	return cli_usage_error("dump", fmt, arg);
}

static int handle_option(void *ctx, int opt, const char *arg)
{
	struct dump_cli *c = ctx;

	switch (opt) {
	case 'p': {
		char *copy = strdup(arg), *save = NULL;

		if (!copy)
			return EXIT_FAIL;
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
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
static bool frame_text(struct symtab *st, const struct symtab_target *stt,
		       const struct pw_frame *f, struct frame_text *out)
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

static int print_text(struct strbuf *sb, struct symtab *st, const struct dump *d)
{
	struct symtab_target stt = { .id = 1, .pid = d->t.pid, .code_type = d->t.code_type,
				     .lay = &d->t.ver.obj };
	char ver[16], why[96];
	int err;

	err = strbuf_addf(sb, "Process %d (", d->t.pid);
	if (!err)
		err = escape_folded(sb, d->t.comm);
	if (!err)
		err = strbuf_addf(sb, "), CPython %s, %zu thread%s%s:\n",
				  py_version_str(&d->t.ver, ver, sizeof(ver)), d->nthreads,
				  d->nthreads == 1 ? "" : "s",
				  d->paused ? "" : " (not paused)");
	if (!err && (d->names_err || d->names.unreadable))
		err = strbuf_addf(sb, "(Python thread names: %s)\n",
				  names_problem(d, why, sizeof(why)));
	for (size_t i = 0; i < d->nthreads && !err; i++) {
		const struct dump_thread *t = &d->threads[i];

		if (t->tid)
			err = strbuf_addf(sb, "\nThread %d \"", t->tid);
		else
			err = strbuf_addf(sb, "\nThread 0x%llx \"", (unsigned long long)t->thread_id);
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
			err = strbuf_addf(sb, "    (no stack: it ran while it was read; without "
					      "--nonblocking the process is paused for the read)\n");
		else if (!err && t->outcome != PW_OUT_SHIPPED)
			err = strbuf_addf(sb, "    (no stack: %s)\n",
					  engine_outcome_label(t->outcome, false));
		for (uint32_t j = 0; t->outcome == PW_OUT_SHIPPED && j < t->nframes && !err; j++) {
			struct frame_text ft;

			if (!frame_text(st, &stt, &t->frames[j], &ft))
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
	}
	return err;
}

static int json_str(struct strbuf *sb, const char *key, const char *v, bool comma)
{
	int err = strbuf_addf(sb, "%s\"%s\":\"", comma ? "," : "", key);

	if (!err)
		err = escape_json(sb, v);
	if (!err)
		err = strbuf_add(sb, "\"", 1);
	return err;
}

static int print_json(struct strbuf *sb, struct symtab *st, const struct dump *d)
{
	struct symtab_target stt = { .id = 1, .pid = d->t.pid, .code_type = d->t.code_type,
				     .lay = &d->t.ver.obj };
	char ver[32], why[96], state[2] = { 0 };
	int err;

	py_version_str(&d->t.ver, ver, sizeof(ver));
	err = strbuf_addf(sb, "{\"pid\":%d", d->t.pid);
	if (!err)
		err = json_str(sb, "comm", d->t.comm, true);
	if (!err)
		err = json_str(sb, "python", ver, true);
	if (!err)
		err = strbuf_addf(sb, ",\"paused\":%s", d->paused ? "true" : "false");
	if (!err)
		err = strbuf_addf(sb, ",\"python_names\":{\"threads\":%zu,\"named\":%zu,"
				  "\"unreadable\":%zu",
				  d->names.nthreads, d->names.named, d->names.unreadable);
	if (!err && d->names_err)
		err = json_str(sb, "error", names_problem(d, why, sizeof(why)), true);
	if (!err)
		err = strbuf_add(sb, "},\"threads\":[", 13);
	for (size_t i = 0; i < d->nthreads && !err; i++) {
		const struct dump_thread *t = &d->threads[i];
		bool first = true;

		state[0] = t->state ? t->state : '?';
		err = strbuf_addf(sb, "%s{\"tid\":%d,\"thread_id\":%llu", i ? "," : "", t->tid,
				  (unsigned long long)t->thread_id);
		if (!err)
			err = json_str(sb, "name", t->name, true);
		/* null: threading does not name it (or its name could not be read) */
		if (!err && t->pyname[0])
			err = json_str(sb, "python_name", t->pyname, true);
		else if (!err)
			err = strbuf_add(sb, ",\"python_name\":null", 19);
		if (!err)
			err = json_str(sb, "state", state, true);
		if (!err)
			err = json_str(sb, "wchan", t->wchan, true);
		/* null: its Python does not tell */
		if (!err)
			err = strbuf_addf(sb, ",\"holds_gil\":%s",
					  !(t->gil & PW_SF_GIL_KNOWN) ? "null" :
					  (t->gil & PW_SF_GIL_HELD)   ? "true" :
									"false");
		if (!err)
			err = json_str(sb, "status",
				       t->outcome == PW_OUT_SHIPPED ? "ok" :
				       t->moved			    ? "ran while read" :
				       engine_outcome_label(t->outcome, false),
				       true);
		if (!err)
			err = strbuf_add(sb, ",\"frames\":[", 11);
		for (uint32_t j = 0; t->outcome == PW_OUT_SHIPPED && j < t->nframes && !err; j++) {
			struct frame_text ft;

			if (!frame_text(st, &stt, &t->frames[j], &ft))
				continue;
			err = strbuf_add(sb, first ? "{" : ",{", first ? 1 : 2);
			first = false;
			if (!err)
				err = json_str(sb, "function", ft.name, false);
			if (!err)
				err = json_str(sb, "file", ft.file, true);
			if (!err)
				err = strbuf_addf(sb, ",\"line\":%d}", ft.line);
		}
		if (!err)
			err = strbuf_add(sb, "]}", 2);
	}
	if (!err)
		err = strbuf_add(sb, "]}", 2);
	return err;
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
	if (c.json)
		strbuf_add(&sb, "{\"processes\":[", 14);
	for (size_t i = 0; i < c.npids; i++) {
		struct dump d;
		char why[512] = "";
		int err = dump_process(c.pids[i], &c.o, &d, why, sizeof(why));

		if (err) {
			pw_err("%s\n", why[0] ? why : strerror(-err));
			ret = EXIT_FAIL;
			dump_free(&d);
			continue;
		}
		if (c.json) {
			if (sb.len > 14 && sb.buf[sb.len - 1] == '}')
				strbuf_add(&sb, ",", 1);
			err = print_json(&sb, st, &d);
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
	if (c.json)
		strbuf_add(&sb, "]}\n", 3);
	if (sb.len && fwrite(sb.buf, 1, sb.len, stdout) != sb.len)
		ret = EXIT_FAIL;
	if (fflush(stdout))
		ret = EXIT_FAIL;
	strbuf_free(&sb);
	symtab__free(st);
	return ret;
}
