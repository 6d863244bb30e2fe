// SPDX-License-Identifier: MIT
/* The sites of each probe to the loader's attach calls. Syscalls are one map entry each and
 * two raw tracepoints for all of them, attached last, when the map is complete. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trace/trace_attach.h"

#define MAX_SYSCALL_NR 1024

uint32_t trace_latency_mask(const struct probe_set *set)
{
	uint32_t mask = 0;

	for (size_t i = 0; i < set->nprobes; i++)
		if (set->probes[i].latency)
			mask |= 1u << set->probes[i].id;
	return mask;
}

static int attach_site(const struct trace_probe *tp, const struct probe_site *ps, struct loader *ld,
		       char *why, size_t why_size)
{
	uint64_t cookie = PW_COOKIE(tp->id, ps->site);
	const struct probe_spec *sp = &tp->spec;
	int err;

	switch (sp->kind) {
	case PROBE_TRACEPOINT:
		return loader__attach_tracepoint(ld, ps->cat, ps->name, cookie, why, why_size);
	case PROBE_UPROBE:
		err = loader__attach_uprobe(ld, ps->path, ps->offset, false, cookie, why, why_size);
		/* the return of a --latency pair carries the entry's probe */
		if (!err && tp->latency)
			err = loader__attach_uprobe(ld, ps->path, ps->offset, true, cookie, why,
						    why_size);
		return err;
	case PROBE_URETPROBE:
		return loader__attach_uprobe(ld, ps->path, ps->offset, true, cookie, why, why_size);
	case PROBE_USDT:
		return loader__attach_usdt(ld, ps->path, ps->cat, ps->name, cookie, why, why_size);
	case PROBE_KPROBE:
	case PROBE_KRETPROBE:
		return loader__attach_kprobe(ld, ps->name, ps->offset, sp->kind == PROBE_KRETPROBE,
					     cookie, why, why_size);
	case PROBE_SOFTWARE:
	case PROBE_HARDWARE:
		return loader__attach_perf(ld, sp->perf_type, sp->perf_config, sp->period, sp->freq,
					   cookie, why, why_size);
	case PROBE_SYSCALL:
		break;
	}
	return 0;
}

int trace_attach(const struct probe_set *set, struct loader *ld, char *why, size_t why_size)
{
	static uint32_t values[MAX_SYSCALL_NR];
	bool enter = false, exit = false;
	int err;

	memset(values, 0, sizeof(values));
	for (size_t i = 0; i < set->nprobes; i++) {
		const struct trace_probe *tp = &set->probes[i];

		for (size_t k = 0; k < tp->nsites; k++) {
			const struct probe_site *ps = &set->sites[tp->first + k];
			uint32_t *v;

			if (tp->spec.kind != PROBE_SYSCALL) {
				err = attach_site(tp, ps, ld, why, why_size);
				if (err) {
					/* the loader's sentence, prefixed with the probe */
					char msg[512];

					snprintf(msg, sizeof(msg), "%s", why);
					snprintf(why, why_size, "'%s': %s", ps->label, msg);
					return err;
				}
				continue;
			}
			if (ps->nr < 0 || ps->nr >= MAX_SYSCALL_NR)
				continue;
			v = &values[ps->nr];
			if (tp->spec.exit)
				*v = PW_SYSCALL_VALUE(PW_SYSCALL_ENTER(*v), tp->id,
						      PW_SYSCALL_PAIR(*v));
			else
				*v = PW_SYSCALL_VALUE(tp->id, PW_SYSCALL_EXIT(*v), tp->latency);
			enter |= !tp->spec.exit;
			exit |= tp->spec.exit || tp->latency;
		}
	}
	for (uint32_t nr = 0; nr < MAX_SYSCALL_NR; nr++) {
		if (!values[nr])
			continue;
		err = loader__set_syscall(ld, nr, values[nr]);
		if (err) {
			snprintf(why, why_size, "cannot set up syscall %u: %s", nr, strerror(-err));
			return err;
		}
	}
	if (enter || exit)
		return loader__attach_syscalls(ld, enter, exit, why, why_size);
	return 0;
}
