// SPDX-License-Identifier: MIT
/* /proc/kallsyms: one line per symbol, "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]",
 * not sorted (modules follow the kernel proper). */
#define _GNU_SOURCE /* getline */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/kallsyms.h"
#include "lib/util.h"

struct ksym {
	uint64_t addr;
	uint32_t name;	 /* offset in `names` */
	uint32_t module; /* offset in `names`; 0 is "" (the kernel proper) */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	struct kallsyms_stats st;
};

/* Append `len` bytes of s and a NUL to the names; its offset, or -ENOMEM. */
static int64_t add_name(struct kallsyms *k, const char *s, size_t len)
{
	int err = grow_array((void **)&k->names, &k->names_cap, k->names_len + len + 1, 1);
	int64_t at = (int64_t)k->names_len;

	if (err)
		return err;
	memcpy(k->names + k->names_len, s, len);
	k->names[k->names_len + len] = 0;
	k->names_len += len + 1;
	return at;
}

/* Text (code) symbols: what a return address can lie in. */
static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static size_t held(const struct kallsyms *k)
{
	return k->cap * sizeof(*k->syms) + k->names_cap;
}

/* One line into the table (counted as skipped when it is no text symbol). 0 or -ENOMEM. */
static int parse_line(struct kallsyms *k, char *line, uint64_t *last_mod, size_t budget,
		      bool *any_nonzero)
{
	char *end, *name, *mod;
	uint64_t addr = strtoull(line, &end, 16);
	size_t name_len;
	int64_t at;
	int err;

	if (end == line || *end != ' ' || !end[1] || end[2] != ' ') {
		k->st.skipped++;
		return 0;
	}
	if (addr)
		*any_nonzero = true;
	if (!is_text(end[1])) {
		k->st.skipped++;
		return 0;
	}
	name = end + 3;
	name_len = strcspn(name, "\t\n");
	if (!name_len) {
		k->st.skipped++;
		return 0;
	}
	mod = name + name_len;
	if (held(k) + name_len + 64 > budget) {
		k->st.over_budget++;
		return 0;
	}
	err = grow_array((void **)&k->syms, &k->cap, k->n + 1, sizeof(*k->syms));
	if (err)
		return err;
	at = add_name(k, name, name_len);
	if (at < 0)
		return (int)at;
	k->syms[k->n] = (struct ksym){ .addr = addr, .name = (uint32_t)at };
	if (*mod == '\t' && mod[1] == '[') {
		size_t mlen = strcspn(mod + 2, "]\n");

		/* a module's symbols come together: its name is stored once */
		if (*last_mod && !strncmp(k->names + *last_mod, mod + 2, mlen) &&
		    !k->names[*last_mod + mlen]) {
			k->syms[k->n].module = (uint32_t)*last_mod;
		} else {
			at = add_name(k, mod + 2, mlen);
			if (at < 0)
				return (int)at;
			k->syms[k->n].module = (uint32_t)at;
			*last_mod = (uint64_t)at;
		}
	}
	k->n++;
	return 0;
}

struct kallsyms *kallsyms__load(const char *path, size_t budget_bytes)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	size_t budget = budget_bytes ? budget_bytes : KALLSYMS_DEFAULT_BUDGET, cap = 0;
	uint64_t last_mod = 0;
	bool any_nonzero = false;
	char *line = NULL;
	FILE *f;
	int err = 0;

	if (!k)
		return NULL;
	f = fopen(path, "re");
	if (!f) {
		free(k);
		return NULL;
	}
	/* offset 0 of the names is "", the module of the kernel proper */
	if (add_name(k, "", 0) < 0)
		err = -ENOMEM;
	while (!err && getline(&line, &cap, f) > 0)
		err = parse_line(k, line, &last_mod, budget, &any_nonzero);
	free(line);
	fclose(f);
	if (err) {
		kallsyms__free(k);
		errno = -err;
		return NULL;
	}
	if (!any_nonzero) {
		/* kptr_restrict (or no CAP_SYSLOG): every address reads 0, none can be named */
		k->st.restricted = true;
		k->n = 0;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_sym);
	k->st.symbols = k->n;
	k->st.bytes = held(k);
	return k;
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

bool kallsyms__lookup(const struct kallsyms *k, uint64_t addr, struct kallsyms_hit *hit)
{
	size_t lo = 0, hi = k->n;

	/* the last symbol at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	hit->name = k->names + k->syms[lo - 1].name;
	hit->module = k->names + k->syms[lo - 1].module;
	hit->offset = addr - k->syms[lo - 1].addr;
	return true;
}

bool kallsyms__is_bpf_glue(const struct kallsyms *k, uint64_t addr)
{
	static const char *const glue[] = {
		"bpf_trace_run",   "__bpf_trace_",	   "__traceiter_",	   "trace_call_bpf",
		"bpf_dispatcher_", "__bpf_prog_",	   "perf_trace_",	   "bpf_get_stack",
		"perf_syscall_",   "bpf_overflow_handler", "__perf_event_overflow"
	};
	struct kallsyms_hit hit;

	if (!kallsyms__lookup(k, addr, &hit))
		return false;
	if (!strcmp(hit.module, "bpf"))
		return true;
	for (size_t i = 0; i < sizeof(glue) / sizeof(glue[0]); i++)
		if (!strncmp(hit.name, glue[i], strlen(glue[i])))
			return true;
	return false;
}

uint64_t kallsyms__first(const struct kallsyms *k)
{
	return k->n ? k->syms[0].addr : 0;
}

const struct kallsyms_stats *kallsyms__stats(const struct kallsyms *k)
{
	return &k->st;
}
