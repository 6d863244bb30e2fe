// SPDX-License-Identifier: MIT
/* A recursive-descent parser straight to postfix: comparisons push a truth value, ! flips
 * the top, && and || combine the top two. What the BPF side trusts (no underflow, one
 * value left, a bounded depth) is proved here while emitting. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/filter.h"
#include "trace/tracefs.h"

#define MAX_DEPTH 64 /* the BPF side's stack of truth values is a 64-bit word */
/* '(' and '!' recurse before anything is emitted: bounded so that a long run of them is
 * refused instead of overflowing the stack */
#define MAX_NESTING 256

struct parser {
	const char *expr, *p;
	const struct probe_set *set;
	const struct trace_probe *tp;
	bool resolved; /* the probe's sites are known: look tracepoint fields up */
	const struct probe_spec *probe;
	bool latency;
	struct pw_filter *f;
	int depth, max_depth;
	int nesting;
	char *why;
	size_t why_size;
	bool failed;
};

static void fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct parser *ps, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (ps->failed)
		return;
	ps->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* a long expression is cut in the message, so the reason always shows */
	if (strlen(ps->expr) > 80)
		snprintf(ps->why, ps->why_size, "--filter '%.60s...': %s", ps->expr, msg);
	else
		snprintf(ps->why, ps->why_size, "--filter '%s': %s", ps->expr, msg);
}

static void skip_space(struct parser *ps)
{
	while (isspace((unsigned char)*ps->p))
		ps->p++;
}

static bool take(struct parser *ps, const char *tok)
{
	size_t n = strlen(tok);

	skip_space(ps);
	if (strncmp(ps->p, tok, n))
		return false;
	ps->p += n;
	return true;
}

static void emit(struct parser *ps, struct pw_filter_insn in, int depth_change)
{
	if (ps->failed)
		return;
	if (ps->f->n >= PW_FILTER_MAX_INSNS) {
		fail(ps, "too long (at most %d comparisons and operators)", PW_FILTER_MAX_INSNS);
		return;
	}
	ps->depth += depth_change;
	if (ps->depth < 1)
		fail(ps, "internal error: operator without operands");
	if (ps->depth > ps->max_depth)
		ps->max_depth = ps->depth;
	if (ps->max_depth > MAX_DEPTH)
		fail(ps, "nested too deep");
	ps->f->insn[ps->f->n++] = in;
}

static const char *probe_name(const struct parser *ps)
{
	return ps->probe->text;
}

/* args.NAME of a tracepoint: where its record holds it, the same in every tracepoint the
 * probe matched (one program serves them all). */
static void record_field(struct parser *ps, struct pw_filter_insn *in, const char *name)
{
	struct tracefs_field want = { 0 };

	in->field = PW_FF_CTX;
	if (ps->probe->kind != PROBE_TRACEPOINT) {
		fail(ps,
		     "args.%s is for tracepoint: probes (syscall entries take arg0..arg5, "
		     "their exits ret)",
		     name);
		return;
	}
	for (size_t k = 0; ps->resolved && k < ps->tp->nsites; k++) {
		const struct probe_site *site = &ps->set->sites[ps->tp->first + k];
		struct tracefs_field f;
		int err = tracefs_field(site->cat, site->name, name, &f);

		if (err == -ENOENT) {
			fail(ps,
			     "tracepoint %s:%s has no field '%s' (its fields are in %s/events/%s/"
			     "%s/format)",
			     site->cat, site->name, name, TRACEFS_DIR, site->cat, site->name);
			return;
		}
		if (err == -EINVAL) {
			fail(ps, "field '%s' of %s:%s is not a number", name, site->cat,
			     site->name);
			return;
		}
		if (err) {
			fail(ps, "cannot read the format of %s:%s: %s", site->cat, site->name,
			     strerror(-err));
			return;
		}
		if (k && memcmp(&f, &want, sizeof(f))) {
			fail(ps,
			     "field '%s' is not at the same place in every tracepoint '%s' "
			     "matches",
			     name, ps->probe->text);
			return;
		}
		want = f;
	}
	if (want.offset > PW_FILTER_REC_MAX - 8) {
		fail(ps, "field '%s' lies past the %d bytes of a record a filter reads", name,
		     PW_FILTER_REC_MAX);
		return;
	}
	in->off = (uint16_t)want.offset;
	in->size = (uint8_t)want.size;
	in->is_signed = want.is_signed;
}

/* A field name, checked against what the probe's hits carry. */
static bool parse_field(struct parser *ps, struct pw_filter_insn *in)
{
	const char *start;
	char name[64];
	size_t n;

	skip_space(ps);
	start = ps->p;
	if (!strncmp(ps->p, "args.", 5)) {
		ps->p += 5;
		start = ps->p;
		while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
			ps->p++;
		n = (size_t)(ps->p - start);
		if (!n || n >= sizeof(name)) {
			fail(ps, "expected a field name after 'args.'");
			return true;
		}
		memcpy(name, start, n);
		name[n] = 0;
		record_field(ps, in, name);
		return true;
	}
	while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
		ps->p++;
	n = (size_t)(ps->p - start);
	if (!n || n >= sizeof(name) || isdigit((unsigned char)*start)) {
		ps->p = start;
		return false;
	}
	memcpy(name, start, n);
	name[n] = 0;
	if (!strcmp(name, "pid")) {
		in->field = PW_FF_PID;
	} else if (!strcmp(name, "tid")) {
		in->field = PW_FF_TID;
	} else if (!strcmp(name, "comm")) {
		in->field = PW_FF_COMM;
	} else if (!strcmp(name, "ret")) {
		if (!probe_has_ret(ps->probe) || ps->latency)
			fail(ps,
			     "probe '%s' has no return value (ret is for uretprobe: and "
			     "sys_exit_ probes, without --latency)",
			     probe_name(ps));
		in->field = PW_FF_RET;
	} else if (n == 4 && !strncmp(name, "arg", 3) && name[3] >= '0' && name[3] <= '5') {
		if (!probe_has_args(ps->probe))
			fail(ps,
			     "probe '%s' has no arguments (arg0..arg5 are for uprobe:, usdt: "
			     "and sys_enter_ probes)",
			     probe_name(ps));
		in->field = PW_FF_ARG;
		in->arg = (uint8_t)(name[3] - '0');
	} else {
		fail(ps, "unknown field '%s' (use arg0..arg5, ret, pid, tid, comm, args.NAME)",
		     name);
	}
	return true;
}

static bool parse_int(struct parser *ps, int64_t *v)
{
	char *end;

	skip_space(ps);
	if (!isdigit((unsigned char)*ps->p) && !(*ps->p == '-' && isdigit((unsigned char)ps->p[1])))
		return false;
	errno = 0;
	if (*ps->p == '-')
		*v = strtoll(ps->p, &end, 0);
	else
		*v = (int64_t)strtoull(ps->p, &end, 0); /* addresses past INT64_MAX wrap alike */
	if (errno)
		fail(ps, "integer out of range");
	ps->p = end;
	return true;
}

static int parse_cmp_op(struct parser *ps)
{
	static const struct {
		const char *tok;
		int cmp;
	} ops[] = { { "==", PW_FCMP_EQ }, { "!=", PW_FCMP_NE }, { "<=", PW_FCMP_LE },
		    { ">=", PW_FCMP_GE }, { "<", PW_FCMP_LT },	{ ">", PW_FCMP_GT } };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (take(ps, ops[i].tok))
			return ops[i].cmp;
	return 0;
}

/* The same comparison with its operands swapped: 5 < arg0 is arg0 > 5. */
static int swap_cmp(int cmp)
{
	switch (cmp) {
	case PW_FCMP_LT:
		return PW_FCMP_GT;
	case PW_FCMP_GT:
		return PW_FCMP_LT;
	case PW_FCMP_LE:
		return PW_FCMP_GE;
	case PW_FCMP_GE:
		return PW_FCMP_LE;
	}
	return cmp;
}

static void parse_comm_value(struct parser *ps, struct pw_filter_insn *in)
{
	const char *start, *end;
	size_t n;

	skip_space(ps);
	if (*ps->p != '"') {
		fail(ps, "comm compares with a \"string\"");
		return;
	}
	start = ++ps->p;
	end = strchr(start, '"');
	if (!end) {
		fail(ps, "unterminated string");
		return;
	}
	n = (size_t)(end - start);
	ps->p = end + 1;
	if (n >= PW_FILTER_STR_LEN) {
		fail(ps, "a comm is at most %d characters", PW_FILTER_STR_LEN - 1);
		return;
	}
	for (uint32_t i = 0; i < PW_FILTER_MAX_STRS; i++) {
		if (ps->f->strs[i][0] &&
		    (strlen(ps->f->strs[i]) != n || memcmp(ps->f->strs[i], start, n)))
			continue;
		memset(ps->f->strs[i], 0, PW_FILTER_STR_LEN);
		memcpy(ps->f->strs[i], start, n);
		in->value = i;
		if (!n) /* an empty comm never matches a thread: keep the slot told apart */
			fail(ps, "empty comm");
		return;
	}
	fail(ps, "at most %d different comm strings", PW_FILTER_MAX_STRS);
}

static void parse_cmp(struct parser *ps)
{
	struct pw_filter_insn in = { .op = PW_FOP_CMP };
	int64_t v;
	int cmp;

	if (parse_field(ps, &in)) {
		cmp = parse_cmp_op(ps);
		if (!cmp) {
			fail(ps, "expected a comparison (== != < > <= >=) near '%.10s'", ps->p);
			return;
		}
		in.cmp = (uint8_t)cmp;
		if (in.field == PW_FF_COMM) {
			if (cmp != PW_FCMP_EQ && cmp != PW_FCMP_NE)
				fail(ps, "comm takes == and != only");
			parse_comm_value(ps, &in);
		} else if (parse_int(ps, &v)) {
			in.value = v;
		} else {
			fail(ps, "expected an integer near '%.10s'", ps->p);
		}
	} else if (parse_int(ps, &v)) {
		cmp = parse_cmp_op(ps);
		if (!cmp || !parse_field(ps, &in) || in.field == PW_FF_COMM) {
			fail(ps, "expected 'INTEGER OP FIELD' near '%.10s'", ps->p);
			return;
		}
		in.cmp = (uint8_t)swap_cmp(cmp);
		in.value = v;
	} else {
		fail(ps, "expected a field or an integer near '%.10s'", ps->p);
		return;
	}
	emit(ps, in, +1);
}

static void parse_or(struct parser *ps);

static bool nest_deeper(struct parser *ps)
{
	if (++ps->nesting <= MAX_NESTING)
		return true;
	fail(ps, "nested too deep (at most %d levels of '(' and '!')", MAX_NESTING);
	return false;
}

static void parse_unary(struct parser *ps)
{
	if (ps->failed)
		return;
	if (take(ps, "!")) {
		if (!nest_deeper(ps))
			return;
		parse_unary(ps);
		ps->nesting--;
		emit(ps, (struct pw_filter_insn){ .op = PW_FOP_NOT }, 0);
		return;
	}
	if (take(ps, "(")) {
		if (!nest_deeper(ps))
			return;
		parse_or(ps);
		ps->nesting--;
		if (!take(ps, ")"))
			fail(ps, "missing ')'");
		return;
	}
	parse_cmp(ps);
}

static void parse_and(struct parser *ps)
{
	parse_unary(ps);
	while (!ps->failed && take(ps, "&&")) {
		parse_unary(ps);
		emit(ps, (struct pw_filter_insn){ .op = PW_FOP_AND }, -1);
	}
}

static void parse_or(struct parser *ps)
{
	parse_and(ps);
	while (!ps->failed && take(ps, "||")) {
		parse_and(ps);
		emit(ps, (struct pw_filter_insn){ .op = PW_FOP_OR }, -1);
	}
}

int filter_compile(struct filter_set *fs, const char *expr, const struct probe_set *set,
		   bool resolved, char *why, size_t why_size)
{
	memset(fs, 0, sizeof(*fs));
	for (size_t i = 0; i < set->nprobes; i++) {
		const struct trace_probe *tp = &set->probes[i];
		struct parser ps = { .expr = expr,
				     .p = expr,
				     .set = set,
				     .tp = tp,
				     .resolved = resolved,
				     .probe = &tp->spec,
				     .latency = tp->latency,
				     .f = &fs->prog[tp->id],
				     .why = why,
				     .why_size = why_size };

		parse_or(&ps);
		skip_space(&ps);
		if (!ps.failed && *ps.p)
			fail(&ps, "unexpected '%.10s'", ps.p);
		if (!ps.failed && ps.depth != 1)
			fail(&ps, "not one condition");
		if (ps.failed)
			return -EINVAL;
		fs->mask |= 1u << tp->id;
	}
	return 0;
}

int filter_load(const struct filter_set *fs, struct loader *ld, char *why, size_t why_size)
{
	for (uint32_t id = 1; id < PW_MAX_PROBES; id++) {
		int err;

		if (!(fs->mask & (1u << id)))
			continue;
		err = loader__set_filter(ld, id, &fs->prog[id]);
		if (err) {
			snprintf(why, why_size, "cannot load the --filter program: %s",
				 strerror(-err));
			return err;
		}
	}
	return 0;
}
