// SPDX-License-Identifier: MIT
/* OTLP profiles: one process of a profile as an ExportProfilesServiceRequest, the body an
 * OpenTelemetry Collector's OTLP/HTTP receiver takes at /v1development/profiles.
 *
 * Field numbers follow opentelemetry-proto v1.11.0 (July 2026), where the profiles signal
 * is still in development (Alpha) and has renumbered fields between releases: Profile's
 * fields past period moved in v1.9.0, and in v1.10.0 Sample's values went from field 2 to
 * 4 while attribute_indices and link_index moved down. A receiver built on an older
 * release decodes these bytes without an error and gets them wrong, so the numbers below,
 * the schema subset the tests decode with (tests/e2e/proto/) and the development-version
 * header the sink sends (sink_otlp.c) change together.
 *
 * The shape: one ResourceProfiles (the process: service.name, process.pid, ...), one
 * ScopeProfiles (scope "pywalk"), one Profile (the window: cpu/nanoseconds, its period,
 * start and length) and the request's dictionary, which every index points into. Each
 * dictionary table starts with its zero entry, as the schema requires (index 0 stands for
 * "none"), and holds no duplicates: a stack two threads share is one Stack, a thread's id
 * and its name are one attribute each. One Sample per (thread, stack), its one value the
 * CPU time it stands for. Python frames have neither an address nor a mapping: a Location
 * is one Line, the function and the line being executed in it. Machine code (--native,
 * --kernel) is what the format has Mappings for: its Location has the address it ran at
 * and the Mapping of the file it lies in (the range, the file offset, the path as the
 * target sees it, the GNU build-id as an attribute), and one Line naming its function,
 * whose system name is the symbol itself. Every Location says its frame's type
 * (profile.frame.type: cpython, native or kernel), as the OpenTelemetry eBPF profiler
 * marks its frames; pywalk's labels ("[off-cpu: ...]") have none.
 *
 * Strings are escaped to valid UTF-8 (U+0000 as U+FFFD): proto3 string fields must be, and
 * a Go receiver rejects the whole request otherwise. Attribute values use AnyValue's
 * inline string_value rather than string_value_strindex, which receivers older than
 * v1.10.0 do not know, and resource attributes use KeyValue's string key for the same
 * reason. */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/pywalk.h"
#include "symbolize/frame.h"
#include "lib/intern.h"
#include "output/out.h"
#include "output/pbenc.h"
#include "lib/strtab.h"
#include "lib/util.h"

/* Field numbers (opentelemetry-proto v1.11.0). */
enum {
	/* collector.profiles.v1development.ExportProfilesServiceRequest */
	REQUEST_RESOURCE_PROFILES = 1,
	REQUEST_DICTIONARY = 2,
	/* profiles.v1development.ResourceProfiles, ScopeProfiles */
	RESOURCE_PROFILES_RESOURCE = 1,
	RESOURCE_PROFILES_SCOPE_PROFILES = 2,
	SCOPE_PROFILES_SCOPE = 1,
	SCOPE_PROFILES_PROFILES = 2,
	/* resource.v1.Resource; common.v1.KeyValue, AnyValue, InstrumentationScope */
	RESOURCE_ATTRIBUTES = 1,
	KEY_VALUE_KEY = 1,
	KEY_VALUE_VALUE = 2,
	ANY_VALUE_STRING = 1,
	ANY_VALUE_INT = 3,
	SCOPE_NAME = 1,
	SCOPE_VERSION = 2,
	/* profiles.v1development.Profile, ValueType, Sample */
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLES = 2,
	PROFILE_TIME_UNIX_NANO = 3, /* fixed64 */
	PROFILE_DURATION_NANO = 4,
	PROFILE_PERIOD_TYPE = 5,
	PROFILE_PERIOD = 6,
	PROFILE_PROFILE_ID = 7,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_STACK_INDEX = 1,
	SAMPLE_ATTRIBUTE_INDICES = 2,
	SAMPLE_VALUES = 4,
	/* profiles.v1development.ProfilesDictionary and its tables' messages */
	DICT_MAPPING_TABLE = 1,
	DICT_LOCATION_TABLE = 2,
	DICT_FUNCTION_TABLE = 3,
	DICT_LINK_TABLE = 4,
	DICT_STRING_TABLE = 5,
	DICT_ATTRIBUTE_TABLE = 6,
	DICT_STACK_TABLE = 7,
	MAPPING_MEMORY_START = 1,
	MAPPING_MEMORY_LIMIT = 2,
	MAPPING_FILE_OFFSET = 3,
	MAPPING_FILENAME_STRINDEX = 4,
	MAPPING_ATTRIBUTE_INDICES = 5,
	LOCATION_MAPPING_INDEX = 1,
	LOCATION_ADDRESS = 2,
	LOCATION_LINES = 3,
	LOCATION_ATTRIBUTE_INDICES = 4,
	LINE_FUNCTION_INDEX = 1,
	LINE_LINE = 2,
	FUNCTION_NAME = 1,
	FUNCTION_SYSTEM_NAME = 2,
	FUNCTION_FILENAME = 3,
	FUNCTION_START_LINE = 4,
	LINK_TRACE_ID = 1,
	LINK_SPAN_ID = 2,
	KEY_VALUE_UNIT_KEY = 1,
	KEY_VALUE_UNIT_VALUE = 2,
	STACK_LOCATION_INDICES = 1,
};

/* Indexes are int32 on the wire: a table may not outgrow that. */
#define MAX_INDEX 0x7fffffff

/* A stack_table entry: the agg stack's frames (root first), which the profile owns. */
struct stack_key {
	const uint32_t *frames;
	uint32_t n;
};

/* An attribute_table entry: key string index, and an integer or a string value (an index
 * into the value table, which only deduplicates). Laid out without padding: it is hashed
 * as bytes. */
struct attr_key {
	uint32_t key;
	uint32_t is_str;
	int64_t value;
};

struct otlp {
	const struct profile *p;
	const struct out_otlp_opts *o;
	struct strtab *strs;   /* string_table: index 0 is "" */
	struct strtab *values; /* attribute string values, to deduplicate attributes */
	/* the agg frame ids, function ids and symtab mapping ids written, in the order
	 * written (uint32_t items): table index = intern id + 1. Hashed, not arrays over
	 * every id of the profile: one process of a window of thousands costs its own */
	struct intern loc_ids, fn_ids, map_ids;
	size_t nmapids;
	uint32_t nlocs, nfns, nmaps;		   /* entries written, the zero entry included */
	struct intern stacks;			   /* stack_table past its zero entry */
	struct intern attrs;			   /* attribute_table past its zero entry */
	struct strbuf maps, locs, fns, stks, atts; /* the tables' entries, encoded */
	struct strbuf samples;			   /* Profile.samples, encoded */
	struct strbuf msg;			   /* scratch: one nested message */
	struct strbuf sub;			   /* scratch: a message nested in msg */
	struct strbuf str;			   /* scratch: a string made valid UTF-8 */
	uint64_t *ids; /* scratch: location indexes of a stack, leaf first */
};

static bool stack_eq(const void *item, const void *key)
{
	const struct stack_key *a = item, *b = key;

	return a->n == b->n && !memcmp(a->frames, b->frames, a->n * sizeof(*a->frames));
}

static bool attr_eq(const void *item, const void *key)
{
	return !memcmp(item, key, sizeof(struct attr_key));
}

static bool u32_eq(const void *item, const void *key)
{
	return *(const uint32_t *)item == *(const uint32_t *)key;
}

/* The table index `id` was written at (intern id + 1), or 0 when it was not yet. */
static int64_t index_of(const struct intern *t, uint32_t id)
{
	int64_t i = intern_find(t, hash_mix64(id), &id);

	return i < 0 ? 0 : i + 1;
}

/* `id` was written at the next index of its table (the intern's next id + 1). */
static int wrote(struct intern *t, uint32_t id)
{
	int64_t i = intern_add(t, hash_mix64(id), &id);

	return i < 0 ? (int)i : 0;
}

/* How many stacks the encoder looks at, and the i-th of them: the listed ones, or all. */
static size_t stacks_to_see(const struct agg *agg, const struct out_otlp_opts *o)
{
	return o->stacks ? o->nstacks : agg__nstacks(agg);
}

static const struct agg_stack *stack_to_see(const struct agg *agg, const struct out_otlp_opts *o,
					    size_t i)
{
	return agg__stack(agg, o->stacks ? o->stacks[i] : i);
}

/* String table index of s made valid UTF-8, or a negative errno. */
static int64_t str_id(struct otlp *ot, const char *s)
{
	int64_t id;
	int err;

	strbuf_reset(&ot->str);
	err = escape_utf8(&ot->str, s);
	if (err)
		return err;
	id = strtab__intern(ot->strs, ot->str.buf ? ot->str.buf : "");
	return id > MAX_INDEX ? -E2BIG : id;
}

/* A string field made valid UTF-8. */
static int put_str(struct otlp *ot, struct strbuf *to, uint32_t field, const char *s)
{
	strbuf_reset(&ot->str);
	escape_utf8(&ot->str, s);
	return pb_msg(to, field, &ot->str);
}

/* An AnyValue (a string, or an integer when str is NULL) into `to` as field `field`. */
static int put_any_value(struct otlp *ot, struct strbuf *to, uint32_t field, const char *str,
			 int64_t num)
{
	struct strbuf v = { 0 };

	if (str) {
		put_str(ot, &v, ANY_VALUE_STRING, str);
	} else if (num) {
		pb_uint(&v, ANY_VALUE_INT, (uint64_t)num);
	} else {
		/* pb_uint leaves a 0 out, which would leave the oneof unset ("empty") */
		static const char int_zero[] = { ANY_VALUE_INT << 3 | PB_VARINT, 0 };

		strbuf_add(&v, int_zero, sizeof(int_zero));
	}
	pb_msg(to, field, &v);
	strbuf_free(&v);
	return to->err;
}

/* A resource attribute (KeyValue) into `to`. */
static int put_resource_attr(struct otlp *ot, struct strbuf *to, const char *key, const char *str,
			     int64_t num)
{
	struct strbuf kv = { 0 };

	pb_bytes(&kv, KEY_VALUE_KEY, key, strlen(key));
	put_any_value(ot, &kv, KEY_VALUE_VALUE, str, num);
	pb_msg(to, RESOURCE_ATTRIBUTES, &kv);
	strbuf_free(&kv);
	return to->err;
}

/* The Resource: what the process is, in the semantic conventions' names. The executable's
 * name is the process's comm (what the kernel calls it; at most 15 bytes). */
static int put_resource(struct otlp *ot, struct strbuf *to, const struct profile_process *pr)
{
	const char *service = ot->o->service && ot->o->service[0] ? ot->o->service
			      : pr->service[0]			  ? pr->service
								  : pr->comm;
	struct strbuf r = { 0 };

	put_resource_attr(ot, &r, "service.name", service, 0);
	if (ot->o->host && ot->o->host[0])
		put_resource_attr(ot, &r, "host.name", ot->o->host, 0);
	put_resource_attr(ot, &r, "process.pid", NULL, pr->pid);
	if (pr->nspid != pr->pid)
		put_resource_attr(ot, &r, "process.vpid", NULL, pr->nspid);
	put_resource_attr(ot, &r, "process.executable.name", pr->comm, 0);
	put_resource_attr(ot, &r, "process.runtime.name", "cpython", 0);
	if (pr->python[0])
		put_resource_attr(ot, &r, "process.runtime.version", pr->python, 0);
	if (pr->container[0])
		put_resource_attr(ot, &r, "container.id", pr->container, 0);
	pb_msg(to, RESOURCE_PROFILES_RESOURCE, &r);
	strbuf_free(&r);
	return to->err;
}

static int put_value_type(struct otlp *ot, struct strbuf *to, uint32_t field, const char *type,
			  const char *unit)
{
	int64_t t = str_id(ot, type), u = str_id(ot, unit);

	if (t < 0 || u < 0)
		return strbuf_fail(to, t < 0 ? (int)t : (int)u);
	strbuf_reset(&ot->msg);
	pb_uint(&ot->msg, VALUE_TYPE_TYPE, (uint64_t)t);
	pb_uint(&ot->msg, VALUE_TYPE_UNIT, (uint64_t)u);
	return pb_msg(to, field, &ot->msg);
}

/* The system name "file:qualname", as the pprof writer has it: unique for a Python function,
 * and unlike the name, so a converter to pprof does not take the name for a mangled one. */
static int64_t system_name(struct otlp *ot, const char *file, const char *name)
{
	int64_t id;
	char *s;

	if (asprintf(&s, "%s:%s", file, name) < 0)
		return -ENOMEM;
	id = str_id(ot, s);
	free(s);
	return id;
}

/* Function index of function id `func`, written into function_table on first use. */
static int64_t function_index(struct otlp *ot, uint32_t func)
{
	const struct symtab *st = profile__symtab(ot->p);
	const char *name = symtab__func_name(st, func), *file = symtab__func_file(st, func);
	int64_t n, f, sys, known = index_of(&ot->fn_ids, func);
	int first;

	if (known)
		return known;
	if (ot->nfns >= MAX_INDEX)
		return -E2BIG;
	n = str_id(ot, name);
	f = str_id(ot, file);
	/* machine code's system name is its symbol, as in the pprof writer */
	sys = frame_kind_is_machine(symtab__func_kind(st, func)) ? n : system_name(ot, file, name);
	if (n < 0 || f < 0 || sys < 0)
		return n < 0 ? n : f < 0 ? f : sys;
	first = symtab__func_firstline(st, func);
	strbuf_reset(&ot->msg);
	pb_uint(&ot->msg, FUNCTION_NAME, (uint64_t)n);
	pb_uint(&ot->msg, FUNCTION_SYSTEM_NAME, (uint64_t)sys);
	pb_uint(&ot->msg, FUNCTION_FILENAME, (uint64_t)f);
	pb_uint(&ot->msg, FUNCTION_START_LINE, first > 0 ? (uint64_t)first : 0);
	if (pb_msg(&ot->fns, DICT_FUNCTION_TABLE, &ot->msg))
		return ot->fns.err;
	if (wrote(&ot->fn_ids, func))
		return -ENOMEM;
	return ot->nfns++;
}

static int64_t attr_index(struct otlp *ot, const char *key, const char *str, int64_t num);

/* Mapping index of symtab mapping `id`, written into mapping_table on first use: its build-id
 * is the semantic conventions' process.executable.build_id.gnu, lowercase hex. */
static int64_t mapping_index(struct otlp *ot, uint32_t id)
{
	const struct symtab_mapping *m = symtab__mapping_at(profile__symtab(ot->p), id);
	char hex[2 * SYMTAB_BUILD_ID_MAX + 1];
	int64_t file, bid = 0, known = index_of(&ot->map_ids, id);

	if (!m || id >= ot->nmapids)
		return -EINVAL; /* interned by the profile with the frame: cannot happen */
	if (known)
		return known;
	if (ot->nmaps >= MAX_INDEX)
		return -E2BIG;
	for (size_t i = 0; i < m->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
	hex[2 * m->build_id_len] = 0;
	file = str_id(ot, m->path);
	if (file >= 0 && m->build_id_len)
		bid = attr_index(ot, "process.executable.build_id.gnu", hex, 0);
	if (file < 0 || bid < 0)
		return file < 0 ? file : bid;
	strbuf_reset(&ot->msg);
	pb_uint(&ot->msg, MAPPING_MEMORY_START, m->start);
	pb_uint(&ot->msg, MAPPING_MEMORY_LIMIT, m->limit);
	pb_uint(&ot->msg, MAPPING_FILE_OFFSET, m->offset);
	pb_uint(&ot->msg, MAPPING_FILENAME_STRINDEX, (uint64_t)file);
	if (bid)
		pb_packed(&ot->msg, MAPPING_ATTRIBUTE_INDICES, (uint64_t[]){ (uint64_t)bid }, 1);
	if (pb_msg(&ot->maps, DICT_MAPPING_TABLE, &ot->msg))
		return ot->maps.err;
	if (wrote(&ot->map_ids, id))
		return -ENOMEM;
	return ot->nmaps++;
}

/* profile.frame.type of a frame of this kind (NULL: pywalk's own labels have none). */
static const char *frame_type(enum frame_kind k)
{
	return k == FRAME_PYTHON   ? "cpython"
	       : k == FRAME_NATIVE ? "native"
	       : k == FRAME_KERNEL ? "kernel"
				   : NULL;
}

/* Location index of agg frame `id`, written into location_table on first use. */
static int64_t location_index(struct otlp *ot, uint32_t id)
{
	const struct agg_frame *fr = agg__frame(profile__agg(ot->p), id);
	const char *type = frame_type(symtab__func_kind(profile__symtab(ot->p), fr->func));
	int64_t fn, map = 0, attr = 0, known = index_of(&ot->loc_ids, id);

	if (known)
		return known;
	if (ot->nlocs >= MAX_INDEX)
		return -E2BIG;
	fn = function_index(ot, fr->func);
	if (fn >= 0 && fr->map)
		map = mapping_index(ot, fr->map);
	if (fn >= 0 && map >= 0 && type)
		attr = attr_index(ot, "profile.frame.type", type, 0);
	if (fn < 0 || map < 0 || attr < 0)
		return fn < 0 ? fn : map < 0 ? map : attr;
	strbuf_reset(&ot->sub);
	strbuf_reset(&ot->msg);
	pb_uint(&ot->msg, LOCATION_MAPPING_INDEX, (uint64_t)map); /* 0: none, left out */
	pb_uint(&ot->msg, LOCATION_ADDRESS, fr->addr);
	pb_uint(&ot->sub, LINE_FUNCTION_INDEX, (uint64_t)fn);
	/* a negative line is garbage from the line table: leave it unset (0) */
	pb_uint(&ot->sub, LINE_LINE, fr->line > 0 ? (uint64_t)fr->line : 0);
	pb_msg(&ot->msg, LOCATION_LINES, &ot->sub);
	if (attr)
		pb_packed(&ot->msg, LOCATION_ATTRIBUTE_INDICES, (uint64_t[]){ (uint64_t)attr }, 1);
	if (pb_msg(&ot->locs, DICT_LOCATION_TABLE, &ot->msg))
		return ot->locs.err;
	if (wrote(&ot->loc_ids, id))
		return -ENOMEM;
	return ot->nlocs++;
}

/* Stack index of agg stack `s`, written into stack_table on first use; 0 for no frames. */
static int64_t stack_index(struct otlp *ot, const struct agg_stack *s)
{
	const struct agg *agg = profile__agg(ot->p);
	struct stack_key k = { agg__stack_frames(agg, s), s->nframes };
	uint64_t hash;
	int64_t id;
	bool added;

	if (!s->nframes)
		return 0;
	/* Stack lists locations leaf first; agg keeps stacks root first */
	for (uint32_t j = 0; j < s->nframes; j++) {
		int64_t loc = location_index(ot, k.frames[s->nframes - 1 - j]);

		if (loc < 0)
			return loc;
		ot->ids[j] = (uint64_t)loc;
	}
	hash = hash_bytes(k.frames, k.n * sizeof(*k.frames), 0);
	id = intern_put(&ot->stacks, hash, &k, &k, &added);
	if (id < 0)
		return id;
	if (id >= MAX_INDEX)
		return -E2BIG;
	if (added) {
		strbuf_reset(&ot->msg);
		pb_packed(&ot->msg, STACK_LOCATION_INDICES, ot->ids, s->nframes);
		if (pb_msg(&ot->stks, DICT_STACK_TABLE, &ot->msg))
			return ot->stks.err;
	}
	return id + 1;
}

/* Attribute index of (key, value), written into attribute_table on first use. */
static int64_t attr_index(struct otlp *ot, const char *key, const char *str, int64_t num)
{
	struct attr_key k = { .is_str = str != NULL, .value = num };
	int64_t key_id = str_id(ot, key), id;
	bool added;

	if (key_id < 0)
		return key_id;
	k.key = (uint32_t)key_id;
	if (str) {
		strbuf_reset(&ot->str);
		if (escape_utf8(&ot->str, str))
			return ot->str.err;
		k.value = strtab__intern(ot->values, ot->str.buf ? ot->str.buf : "");
		if (k.value < 0)
			return k.value;
	}
	id = intern_put(&ot->attrs, hash_bytes(&k, sizeof(k), 0), &k, &k, &added);
	if (id < 0)
		return id;
	if (id >= MAX_INDEX)
		return -E2BIG;
	if (added) {
		strbuf_reset(&ot->msg);
		pb_uint(&ot->msg, KEY_VALUE_UNIT_KEY, k.key);
		put_any_value(ot, &ot->msg, KEY_VALUE_UNIT_VALUE, str, num);
		if (pb_msg(&ot->atts, DICT_ATTRIBUTE_TABLE, &ot->msg))
			return ot->atts.err;
	}
	return id + 1;
}

/* One Sample per agg stack of the process; the dictionary's tables fill as they go. */
static int put_samples(struct otlp *ot)
{
	const struct agg *agg = profile__agg(ot->p);
	uint64_t period_ns = profile__period_ns(ot->p);

	for (size_t i = 0; i < stacks_to_see(agg, ot->o); i++) {
		const struct agg_stack *s = stack_to_see(agg, ot->o, i);
		uint64_t attrs[3], value = period_ns ? s->count * period_ns : s->count;
		int64_t stack, tid, tname, task = -1;
		const char *task_name;
		char buf[256];
		size_t nattrs = 2;

		if (s->proc != ot->o->proc)
			continue;
		stack = stack_index(ot, s);
		if (stack < 0)
			return (int)stack;
		tid = attr_index(ot, "thread.id", NULL, s->tid);
		if (tid < 0)
			return (int)tid;
		tname = attr_index(ot, "thread.name",
				   profile__proc_thread_name(ot->p, s->proc, s->tid), 0);
		if (tname < 0)
			return (int)tname;
		/* --async: the task the thread was running */
		task_name = profile__stack_task(ot->p, agg__stack_frames(agg, s), s->nframes, buf,
						sizeof(buf));
		if (task_name && (task = attr_index(ot, "task_name", task_name, 0)) < 0)
			return (int)task;
		attrs[0] = (uint64_t)tid;
		attrs[1] = (uint64_t)tname;
		if (task_name)
			attrs[nattrs++] = (uint64_t)task;
		strbuf_reset(&ot->msg);
		pb_uint(&ot->msg, SAMPLE_STACK_INDEX, (uint64_t)stack);
		pb_packed(&ot->msg, SAMPLE_ATTRIBUTE_INDICES, attrs, nattrs);
		pb_packed(&ot->msg, SAMPLE_VALUES, &value, 1);
		if (pb_msg(&ot->samples, PROFILE_SAMPLES, &ot->msg))
			return ot->samples.err;
	}
	return 0;
}

/* Append encoded fields as they are (or their buffer's error). */
static int put_raw(struct strbuf *to, const struct strbuf *fields)
{
	if (fields->err)
		return strbuf_fail(to, fields->err);
	return fields->len ? strbuf_add(to, fields->buf, fields->len) : to->err;
}

/* The Profile. Its value types come first, so that their strings have low indexes. With a
 * known rate a sample's value is CPU time (count x period); without one only a count. The
 * id is random: a delivery retried after a timeout may reach a back end twice, and the id
 * is how it can tell. */
static int put_profile(struct otlp *ot, struct strbuf *to)
{
	const struct profile_sampling *smp = profile__sampling(ot->p);
	uint64_t period_ns = profile__period_ns(ot->p);
	struct strbuf pr = { 0 };
	uint8_t id[16] = { 0 };
	int err;

	if (period_ns) {
		put_value_type(ot, &pr, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
		put_value_type(ot, &pr, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds");
	} else {
		put_value_type(ot, &pr, PROFILE_SAMPLE_TYPE, "samples", "count");
	}
	err = pr.err ? pr.err : put_samples(ot);
	if (err)
		strbuf_fail(&pr, err);
	put_raw(&pr, &ot->samples);
	pb_fixed64(&pr, PROFILE_TIME_UNIX_NANO, smp->start_ns);
	pb_uint(&pr, PROFILE_DURATION_NANO, profile__duration_ns(ot->p));
	pb_uint(&pr, PROFILE_PERIOD, period_ns);
	if (getrandom(id, sizeof(id), GRND_NONBLOCK) == (ssize_t)sizeof(id) &&
	    memcmp(id, (uint8_t[16]){ 0 }, sizeof(id))) /* all zeroes is "invalid" */
		pb_bytes(&pr, PROFILE_PROFILE_ID, id, sizeof(id));
	pb_msg(to, SCOPE_PROFILES_PROFILES, &pr);
	strbuf_free(&pr);
	return to->err;
}

/* The dictionary, tables in field order, each with its zero entry first. Link's zero entry
 * has ids of full length (16 and 8 zero bytes), as the schema advises for decoders that
 * check lengths; nothing links to it. */
static int put_dictionary(struct otlp *ot, struct strbuf *to)
{
	static const uint8_t zero[16];
	struct strbuf d = { 0 }, link = { 0 };

	pb_bytes(&d, DICT_MAPPING_TABLE, NULL, 0);
	put_raw(&d, &ot->maps);
	pb_bytes(&d, DICT_LOCATION_TABLE, NULL, 0);
	put_raw(&d, &ot->locs);
	pb_bytes(&d, DICT_FUNCTION_TABLE, NULL, 0);
	put_raw(&d, &ot->fns);
	pb_bytes(&link, LINK_TRACE_ID, zero, 16);
	pb_bytes(&link, LINK_SPAN_ID, zero, 8);
	pb_msg(&d, DICT_LINK_TABLE, &link);
	for (size_t i = 0; !d.err && i < strtab__count(ot->strs); i++) {
		const char *s = strtab__get(ot->strs, i);

		pb_bytes(&d, DICT_STRING_TABLE, s, strlen(s));
	}
	pb_bytes(&d, DICT_ATTRIBUTE_TABLE, NULL, 0);
	put_raw(&d, &ot->atts);
	pb_bytes(&d, DICT_STACK_TABLE, NULL, 0);
	put_raw(&d, &ot->stks);
	pb_msg(to, REQUEST_DICTIONARY, &d);
	strbuf_free(&d);
	strbuf_free(&link);
	return to->err;
}

/* ResourceProfiles { resource, ScopeProfiles { scope, profile } }. */
static int put_resource_profiles(struct otlp *ot, struct strbuf *to,
				 const struct profile_process *pr)
{
	struct strbuf rp = { 0 }, sp = { 0 }, scope = { 0 };

	put_resource(ot, &rp, pr);
	pb_bytes(&scope, SCOPE_NAME, "pywalk", 6);
	pb_bytes(&scope, SCOPE_VERSION, PYWALK_VERSION, strlen(PYWALK_VERSION));
	pb_msg(&sp, SCOPE_PROFILES_SCOPE, &scope);
	if (!sp.err && !rp.err) /* the profile is the costly part */
		put_profile(ot, &sp);
	pb_msg(&rp, RESOURCE_PROFILES_SCOPE_PROFILES, &sp);
	pb_msg(to, REQUEST_RESOURCE_PROFILES, &rp);
	strbuf_free(&rp);
	strbuf_free(&sp);
	strbuf_free(&scope);
	return to->err;
}

int out_otlp_encode(const struct profile *p, const struct out_otlp_opts *o, void **buf, size_t *len)
{
	const struct profile_process *pr = profile__process(p, o->proc);
	const struct agg *agg = profile__agg(p);
	struct otlp ot = { .p = p,
			   .o = o,
			   .stacks = INTERN_INIT(struct stack_key, stack_eq),
			   .attrs = INTERN_INIT(struct attr_key, attr_eq),
			   .loc_ids = INTERN_INIT(uint32_t, u32_eq),
			   .fn_ids = INTERN_INIT(uint32_t, u32_eq),
			   .map_ids = INTERN_INIT(uint32_t, u32_eq),
			   .nlocs = 1,
			   .nfns = 1,
			   .nmaps = 1 };
	struct strbuf req = { 0 };
	size_t maxdepth = 1, i;
	int err = 0;

	*buf = NULL;
	*len = 0;
	if (!pr)
		return -EINVAL;
	for (i = 0; i < stacks_to_see(agg, o); i++)
		if (stack_to_see(agg, o, i)->nframes > maxdepth)
			maxdepth = stack_to_see(agg, o, i)->nframes;
	ot.nmapids = symtab__nmappings(profile__symtab(p));
	ot.strs = strtab__new();
	ot.values = strtab__new();
	ot.ids = calloc(maxdepth, sizeof(*ot.ids));
	if (!ot.strs || !ot.values || !ot.ids || strtab__intern(ot.strs, "") != 0)
		err = -ENOMEM;
	/* the dictionary goes last: the profile fills its tables */
	if (!err)
		err = put_resource_profiles(&ot, &req, pr);
	if (!err)
		err = put_dictionary(&ot, &req);
	strtab__free(ot.strs);
	strtab__free(ot.values);
	intern_free(&ot.stacks);
	intern_free(&ot.attrs);
	free(ot.ids);
	intern_free(&ot.loc_ids);
	intern_free(&ot.fn_ids);
	intern_free(&ot.map_ids);
	strbuf_free(&ot.maps);
	strbuf_free(&ot.locs);
	strbuf_free(&ot.fns);
	strbuf_free(&ot.stks);
	strbuf_free(&ot.atts);
	strbuf_free(&ot.samples);
	strbuf_free(&ot.msg);
	strbuf_free(&ot.sub);
	strbuf_free(&ot.str);
	if (err) {
		strbuf_free(&req);
		return err;
	}
	*buf = req.buf;
	*len = req.len;
	return 0;
}
