// SPDX-License-Identifier: MIT
/* pprof: a gzipped perftools.profiles.Profile (github.com/google/pprof, proto/profile.proto),
 * what pprof, Pyroscope and Parca read. One Sample per interned (pid, tid) stack with values
 * [samples/count, cpu/nanoseconds] (off_cpu/nanoseconds or wall/nanoseconds alone for
 * --mode off-cpu and wall) and labels pid, tid, thread_name (the Python name, else the OS
 * one), os_thread_name, block_reason on off-CPU stacks (plus process_name with
 * several processes, ns_pid and container_id in a container); one Location per
 * (function, line) frame; one Function per (qualname, file). Native and kernel frames get a
 * Location per address, with the address as the target ran it and the Mapping it lies in
 * (path and build-id; the kernel's is "[kernel.kallsyms]"), so pprof can symbolize them
 * again. Thread and process root frames are not added: pprof keeps them as labels (`pprof
 * -tagroot thread_name`). */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/pywalk.h"
#include "output/out.h"
#include "output/pbenc.h"
#include "lib/intern.h"
#include "lib/strtab.h"
#include "lib/util.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

struct pprof {
	const struct profile *p;
	const struct out_pprof_opts *o;
	struct intern used;  /* agg frame ids the samples written use (uint32_t items) */
	uint32_t *used_ids;  /* the same, ascending: Locations are written in id order */
	struct strtab *strs; /* string_table: index 0 must be "" */
	struct strbuf out;   /* the Profile message */
	struct strbuf msg;   /* scratch: one nested message */
	struct strbuf sub;   /* scratch: a message nested in msg */
	struct strbuf str;   /* scratch: a string made valid UTF-8 */
	uint64_t *ids;	     /* scratch: location ids of a stack, leaf first */
};

static bool u32_eq(const void *item, const void *key)
{
	return *(const uint32_t *)item == *(const uint32_t *)key;
}

/* Put `id` in set `t` (an intern of uint32_t); *added says whether it is new. 0 or -ENOMEM.
 * The sets hold what one process's stacks use, so the work follows them: a bitmap over
 * every frame of a window of thousands of processes would cost each process the window. */
static int set_add(struct intern *t, uint32_t id, bool *added)
{
	int64_t r = intern_put(t, hash_mix64(id), &id, &id, added);

	return r < 0 ? (int)r : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* How many stacks the writer looks at, and the i-th of them: the listed ones, or all. */
static size_t stacks_to_see(const struct agg *agg, const struct out_pprof_opts *o)
{
	return o->stacks ? o->nstacks : agg__nstacks(agg);
}

static const struct agg_stack *stack_to_see(const struct agg *agg, const struct out_pprof_opts *o,
					    size_t i)
{
	return agg__stack(agg, o->stacks ? o->stacks[i] : i);
}

/* String table index of s (as valid UTF-8, U+0000 as U+FFFD), or a negative errno. */
static int64_t str_id(struct pprof *pp, const char *s)
{
	int err;

	strbuf_reset(&pp->str);
	err = escape_utf8(&pp->str, s);
	if (err)
		return err;
	return strtab__intern(pp->strs, pp->str.buf ? pp->str.buf : "");
}

/* Field `field` of sb: a string table index, or the failure that `id` is (kept as sb's
 * error). */
static int put_id(struct strbuf *sb, uint32_t field, int64_t id)
{
	return id < 0 ? strbuf_fail(sb, (int)id) : pb_uint(sb, field, (uint64_t)id);
}

static int put_strid(struct pprof *pp, struct strbuf *sb, uint32_t field, const char *s)
{
	return put_id(sb, field, str_id(pp, s));
}

static int put_value_type(struct pprof *pp, uint32_t field, const char *type, const char *unit)
{
	strbuf_reset(&pp->msg);
	put_strid(pp, &pp->msg, VALUE_TYPE_TYPE, type);
	put_strid(pp, &pp->msg, VALUE_TYPE_UNIT, unit);
	return pb_msg(&pp->out, field, &pp->msg);
}

/* A Label into pp->msg (the Sample being built): a string or a number. */
static int put_label(struct pprof *pp, const char *key, const char *str, int64_t num)
{
	strbuf_reset(&pp->sub);
	put_strid(pp, &pp->sub, LABEL_KEY, key);
	if (str)
		put_strid(pp, &pp->sub, LABEL_STR, str);
	else
		pb_uint(&pp->sub, LABEL_NUM, (uint64_t)num);
	return pb_msg(&pp->msg, SAMPLE_LABEL, &pp->sub);
}

/* What tells processes apart: its name (when the profile holds several), and in a
 * container its namespace PID and the container id. */
static void put_process_labels(struct pprof *pp, const struct profile_process *pr)
{
	if (!pr)
		return;
	if (profile__opts(pp->p)->by_process)
		put_label(pp, "process_name", pr->comm, 0);
	if (pr->nspid != pr->pid)
		put_label(pp, "ns_pid", NULL, pr->nspid);
	if (pr->container[0])
		put_label(pp, "container_id", pr->container, 0);
}

static int put_samples(struct pprof *pp)
{
	const struct agg *agg = profile__agg(pp->p);
	uint64_t period_ns = profile__period_ns(pp->p);

	for (size_t i = 0; i < stacks_to_see(agg, pp->o) && !pp->out.err; i++) {
		const struct agg_stack *s = stack_to_see(agg, pp->o, i);
		const uint32_t *frames = agg__stack_frames(agg, s);
		uint64_t values[PW_MAX_PROBES] = { s->count, s->count * period_ns };
		uint32_t nprobes = profile__opts(pp->p)->nprobes;
		/* off-cpu and wall counts are nanoseconds already: one value */
		size_t nvalues = profile__counts_ns(pp->p) ? 1 : period_ns ? 2 : 1;
		const char *reason, *task_name;
		char task[256];

		if ((pp->o->proc >= 0 && s->proc != (uint32_t)pp->o->proc) ||
		    (pp->o->pid > 0 && s->pid != (uint64_t)pp->o->pid))
			continue;
		/* pprof lists locations leaf first; agg keeps stacks root first */
		for (uint32_t j = 0; j < s->nframes; j++) {
			pp->ids[j] = (uint64_t)frames[s->nframes - 1 - j] + 1;
			if (set_add(&pp->used, frames[j], NULL))
				return strbuf_fail(&pp->out, -ENOMEM);
		}
		/* trace: one sample type per probe, a stack's value in its probe's column */
		if (nprobes) {
			memset(values, 0, sizeof(values));
			if (s->probe >= 1 && s->probe <= nprobes && s->probe < PW_MAX_PROBES)
				values[s->probe - 1] = s->count;
			nvalues = nprobes;
		}
		strbuf_reset(&pp->msg);
		pb_packed(&pp->msg, SAMPLE_LOCATION_ID, pp->ids, s->nframes);
		pb_packed(&pp->msg, SAMPLE_VALUE, values, nvalues);
		put_label(pp, "pid", NULL, s->pid);
		put_label(pp, pp->o->fleet ? "thread_id" : "tid", NULL, s->tid);
		put_label(pp, "thread_name", profile__proc_thread_name(pp->p, s->proc, s->tid), 0);
		put_label(pp, "os_thread_name",
			  profile__proc_thread_os_name(pp->p, s->proc, s->tid), 0);
		/* why an off-CPU stack was off CPU: its leaf pseudo-frame says it too */
		if (s->nframes && (reason = profile__block_reason(pp->p, frames[s->nframes - 1])))
			put_label(pp, "block_reason", reason, 0);
		/* --async: the task the thread was running (its mark says it too) */
		task_name = profile__stack_task(pp->p, frames, s->nframes, task, sizeof(task));
		if (task_name)
			put_label(pp, "task_name", task_name, 0);
		put_process_labels(pp, profile__process(pp->p, s->proc));
		for (size_t l = 0; l < pp->o->nlabels; l++)
			put_label(pp, pp->o->labels[l][0], pp->o->labels[l][1], 0);
		pb_msg(&pp->out, PROFILE_SAMPLE, &pp->msg);
	}
	return pp->out.err;
}

/* The frames the samples use, ascending (what Locations and Mappings are written from). */
static int sort_used(struct pprof *pp)
{
	size_t n = intern_count(&pp->used);

	if (pp->out.err)
		return pp->out.err;
	pp->used_ids = malloc((n ? n : 1) * sizeof(*pp->used_ids));
	if (!pp->used_ids)
		return strbuf_fail(&pp->out, -ENOMEM);
	for (size_t i = 0; i < n; i++)
		pp->used_ids[i] = *(const uint32_t *)intern_at(&pp->used, i);
	qsort(pp->used_ids, n, sizeof(*pp->used_ids), cmp_u32);
	return 0;
}

/* The system name "file:qualname", which names a Python function uniquely. It must differ
 * from the name: pprof treats a function whose two names are equal as not yet demangled and
 * "simplifies" it as C++, cutting <...> and (...) out, so "<module>" or "<lambda>" would
 * print as nothing (github.com/google/pprof internal/symbolizer, demangleSingleFunction). */
static int64_t system_name(struct pprof *pp, const char *file, const char *name)
{
	int64_t id;
	char *s;

	if (asprintf(&s, "%s:%s", file, name) < 0)
		return -ENOMEM;
	id = str_id(pp, s);
	free(s);
	return id;
}

/* The build-id as pprof writes it: lowercase hex ("" for none). */
static void build_id_hex(const struct symtab_mapping *m, char hex[2 * SYMTAB_BUILD_ID_MAX + 1])
{
	for (size_t i = 0; i < m->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
	hex[2 * m->build_id_len] = 0;
}

/* The Mappings (id = mapping id) that the frames written lie in. */
static int put_mappings(struct pprof *pp)
{
	const struct agg *agg = profile__agg(pp->p);
	const struct symtab *st = profile__symtab(pp->p);
	struct intern seen = INTERN_INIT(uint32_t, u32_eq);

	for (size_t i = 0; i < intern_count(&pp->used) && !pp->out.err; i++) {
		const struct agg_frame *fr = agg__frame(agg, pp->used_ids[i]);
		const struct symtab_mapping *m = symtab__mapping_at(st, fr->map);
		char hex[2 * SYMTAB_BUILD_ID_MAX + 1];
		bool added;

		if (!m)
			continue;
		if (set_add(&seen, fr->map, &added)) {
			strbuf_fail(&pp->out, -ENOMEM);
			break;
		}
		if (!added)
			continue;
		build_id_hex(m, hex);
		strbuf_reset(&pp->msg);
		pb_uint(&pp->msg, MAPPING_ID, fr->map);
		pb_uint(&pp->msg, MAPPING_MEMORY_START, m->start);
		pb_uint(&pp->msg, MAPPING_MEMORY_LIMIT, m->limit);
		pb_uint(&pp->msg, MAPPING_FILE_OFFSET, m->offset);
		put_strid(pp, &pp->msg, MAPPING_FILENAME, m->path);
		put_strid(pp, &pp->msg, MAPPING_BUILD_ID, hex); /* "": index 0, left out */
		pb_uint(&pp->msg, MAPPING_HAS_FUNCTIONS, 1);
		pb_msg(&pp->out, PROFILE_MAPPING, &pp->msg);
	}
	intern_free(&seen);
	return pp->out.err;
}

/* A Function's system name: a Python function's "file:qualname"; machine code's own name
 * (pprof demangles a C++ name whose two names are equal, which is what it is for). */
static int64_t function_system_name(struct pprof *pp, const struct symtab *st, uint32_t func)
{
	if (frame_kind_is_machine(symtab__func_kind(st, func)))
		return str_id(pp, symtab__func_name(st, func));
	return system_name(pp, symtab__func_file(st, func), symtab__func_name(st, func));
}

/* Locations (id = agg frame id + 1) and the Functions they use (id = function id + 1). */
static int put_locations(struct pprof *pp)
{
	const struct agg *agg = profile__agg(pp->p);
	const struct symtab *st = profile__symtab(pp->p);
	struct intern seen = INTERN_INIT(uint32_t, u32_eq);

	for (size_t k = 0; k < intern_count(&pp->used) && !pp->out.err; k++) {
		uint32_t i = pp->used_ids[k];
		const struct agg_frame *fr = agg__frame(agg, i);
		bool added;

		strbuf_reset(&pp->sub);
		strbuf_reset(&pp->msg);
		pb_uint(&pp->sub, LINE_FUNCTION_ID, (uint64_t)fr->func + 1);
		/* a negative line is garbage from the line table: leave it unknown (0) */
		pb_uint(&pp->sub, LINE_LINE, fr->line > 0 ? (uint64_t)fr->line : 0);
		pb_uint(&pp->msg, LOCATION_ID, i + 1);
		pb_uint(&pp->msg, LOCATION_MAPPING_ID, fr->map); /* 0: none, left out */
		pb_uint(&pp->msg, LOCATION_ADDRESS, fr->addr);
		pb_msg(&pp->msg, LOCATION_LINE, &pp->sub);
		pb_msg(&pp->out, PROFILE_LOCATION, &pp->msg);
		if (set_add(&seen, fr->func, &added)) {
			strbuf_fail(&pp->out, -ENOMEM);
			break;
		}
		if (!added)
			continue;
		strbuf_reset(&pp->msg);
		pb_uint(&pp->msg, FUNCTION_ID, (uint64_t)fr->func + 1);
		put_strid(pp, &pp->msg, FUNCTION_NAME, symtab__func_name(st, fr->func));
		put_id(&pp->msg, FUNCTION_SYSTEM_NAME, function_system_name(pp, st, fr->func));
		put_strid(pp, &pp->msg, FUNCTION_FILENAME, symtab__func_file(st, fr->func));
		pb_uint(&pp->msg, FUNCTION_START_LINE,
			(uint64_t)(int64_t)symtab__func_firstline(st, fr->func));
		pb_msg(&pp->out, PROFILE_FUNCTION, &pp->msg);
	}
	intern_free(&seen);
	return pp->out.err;
}

/* Profile-level fields; the string table goes last, once every string is known. */
static int put_header(struct pprof *pp)
{
	const struct profile_sampling *smp = profile__sampling(pp->p);
	const struct profile_opts *po = profile__opts(pp->p);
	uint64_t period_ns = profile__period_ns(pp->p);

	if (profile__counts_ns(pp->p)) {
		const char *name = profile__value_name(pp->p);

		/* off_cpu/nanoseconds or wall/nanoseconds: the only value, period 1 ns */
		put_value_type(pp, PROFILE_SAMPLE_TYPE, name, "nanoseconds");
		put_value_type(pp, PROFILE_PERIOD_TYPE, name, "nanoseconds");
		pb_uint(&pp->out, PROFILE_PERIOD, 1);
	} else {
		/* trace: each probe's hits (count) or time inside (nanoseconds, --latency) */
		if (po->nprobes) {
			for (uint32_t i = 1; i <= po->nprobes && i < PW_MAX_PROBES; i++)
				put_value_type(pp, PROFILE_SAMPLE_TYPE,
					       po->probe_names[i] ? po->probe_names[i] : "?",
					       po->probe_ns[i] ? "nanoseconds" : "count");
			period_ns = 0;
		} else {
			put_value_type(pp, PROFILE_SAMPLE_TYPE, "samples", "count");
		}
		if (period_ns) {
			put_value_type(pp, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
			put_value_type(pp, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
			pb_uint(&pp->out, PROFILE_PERIOD, period_ns);
			put_strid(pp, &pp->out, PROFILE_DEFAULT_SAMPLE_TYPE, "cpu");
		}
	}
	pb_uint(&pp->out, PROFILE_TIME_NANOS, smp->start_ns);
	pb_uint(&pp->out, PROFILE_DURATION_NANOS, profile__duration_ns(pp->p));
	return put_strid(pp, &pp->out, PROFILE_COMMENT, "pywalk " PYWALK_VERSION);
}

/* gzip (RFC 1952) `len` bytes to f through zlib; pprof reads gzipped or raw protobuf. */
static int gzip_write(FILE *f, const void *data, size_t len)
{
	z_stream zs = { 0 };
	unsigned char chunk[64 * 1024];
	size_t n;
	int err = 0, zerr;

	/* windowBits 15 + 16 asks zlib for a gzip header and trailer instead of zlib's */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	zs.next_in = (unsigned char *)data;
	zs.avail_in = 0;
	do {
		/* feed at most UINT_MAX bytes at a time: avail_in is an unsigned int */
		if (!zs.avail_in && len) {
			zs.avail_in = len > 0x40000000 ? 0x40000000 : (unsigned int)len;
			len -= zs.avail_in;
		}
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		zerr = deflate(&zs, len || zs.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (zerr == Z_STREAM_ERROR) {
			err = -EINVAL;
			break;
		}
		n = sizeof(chunk) - zs.avail_out;
		if (fwrite(chunk, 1, n, f) != n) {
			err = -EIO;
			break;
		}
	} while (zerr != Z_STREAM_END);
	deflateEnd(&zs);
	return err;
}

int out_pprof_write(FILE *f, const struct profile *p)
{
	static const struct out_pprof_opts all = { .proc = -1 };

	return out_pprof_write_opts(f, p, &all);
}

int out_pprof_write_opts(FILE *f, const struct profile *p, const struct out_pprof_opts *o)
{
	struct pprof pp = { .p = p, .o = o, .used = INTERN_INIT(uint32_t, u32_eq) };
	const struct agg *agg = profile__agg(p);
	size_t maxdepth = 1, i;
	int err = 0;

	for (i = 0; i < stacks_to_see(agg, o); i++)
		if (stack_to_see(agg, o, i)->nframes > maxdepth)
			maxdepth = stack_to_see(agg, o, i)->nframes;
	pp.strs = strtab__new();
	pp.ids = calloc(maxdepth, sizeof(*pp.ids));
	if (!pp.strs || !pp.ids || strtab__intern(pp.strs, "") != 0) {
		strbuf_fail(&pp.out, -ENOMEM);
	} else {
		/* each part does nothing once pp.out has an error */
		put_header(&pp);
		put_samples(&pp);
		sort_used(&pp);
		put_mappings(&pp);
		put_locations(&pp);
		for (i = 0; !pp.out.err && i < strtab__count(pp.strs); i++) {
			const char *s = strtab__get(pp.strs, i);

			pb_bytes(&pp.out, PROFILE_STRING_TABLE, s, strlen(s));
		}
	}
	err = pp.out.err ? pp.out.err : gzip_write(f, pp.out.buf, pp.out.len);
	if (!err && ferror(f))
		err = -EIO;
	strtab__free(pp.strs);
	free(pp.ids);
	intern_free(&pp.used);
	free(pp.used_ids);
	strbuf_free(&pp.out);
	strbuf_free(&pp.msg);
	strbuf_free(&pp.sub);
	strbuf_free(&pp.str);
	return err;
}
