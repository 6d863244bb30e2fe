// SPDX-License-Identifier: MIT
/* Unit tests for user/output/out_otlp.c: the ExportProfilesServiceRequest of one process, decoded
 * here by a small protobuf reader (no generated code, no external tool) and checked
 * structurally against the field numbers of opentelemetry-proto v1.11.0: the resource and
 * scope, the profile's types, times and period, every dictionary table's zero entry, that
 * no table holds a duplicate or an entry nothing refers to, that every index points into
 * its table, and that each sample's stack, attributes and value are what was counted.
 * Also: only the named process is written, hostile names come out as valid UTF-8, a
 * profile without a rate counts samples, and pbenc's fixed64. */
#include "test_out_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cmd/cmd.h"
#include "output/pbenc.h"

/* --- a protobuf reader: a message as its list of fields ---------------------------- */

struct pbf {
	uint32_t num;
	unsigned int wire; /* PB_VARINT, PB_I64, PB_LEN */
	uint64_t v;	   /* a varint or fixed64's value; a length-delimited field's length */
	const uint8_t *p;  /* a length-delimited field's bytes */
};

struct pbm {
	struct pbf *f;
	size_t n;
};

/* Every message decoded in a test, freed at its end. */
static struct pbf *arena[4096];
static size_t narena;

static void arena_free(void)
{
	while (narena)
		free(arena[--narena]);
}

static uint64_t rd_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		assert_true(*p < end);
		v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return v;
	}
	fail_msg("varint longer than 10 bytes");
	return 0;
}

/* Decode `len` bytes as a message; fails the test on anything malformed. */
static struct pbm parse(const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len;
	struct pbm m = { 0 };
	size_t cap = 0;

	while (p < end) {
		uint64_t key = rd_varint(&p, end);
		struct pbf f = { .num = (uint32_t)(key >> 3), .wire = key & 7 };

		assert_true(f.num > 0);
		if (f.wire == PB_VARINT) {
			f.v = rd_varint(&p, end);
		} else if (f.wire == PB_I64) {
			assert_true(end - p >= 8);
			for (int i = 0; i < 8; i++)
				f.v |= (uint64_t)p[i] << (8 * i);
			p += 8;
		} else {
			assert_int_equal(f.wire, PB_LEN);
			f.v = rd_varint(&p, end);
			assert_true(f.v <= (uint64_t)(end - p));
			f.p = p;
			p += f.v;
		}
		if (m.n == cap) {
			cap = cap ? 2 * cap : 8;
			m.f = realloc(m.f, cap * sizeof(*m.f));
			assert_non_null(m.f);
		}
		m.f[m.n++] = f;
	}
	if (m.f) {
		assert_true(narena < sizeof(arena) / sizeof(arena[0]));
		arena[narena++] = m.f;
	}
	return m;
}

static size_t count(const struct pbm *m, uint32_t num)
{
	size_t n = 0;

	for (size_t i = 0; i < m->n; i++)
		n += m->f[i].num == num;
	return n;
}

/* The idx-th field `num` of m (which must exist). */
static const struct pbf *get(const struct pbm *m, uint32_t num, size_t idx)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->f[i].num == num && !idx--)
			return &m->f[i];
	fail_msg("no field %u (occurrence %zu)", num, idx);
	return NULL;
}

/* A varint field's value, 0 when absent (proto3 leaves zeroes out); at most once. */
static uint64_t uint_of(const struct pbm *m, uint32_t num)
{
	assert_true(count(m, num) <= 1);
	if (!count(m, num))
		return 0;
	assert_int_equal(get(m, num, 0)->wire, PB_VARINT);
	return get(m, num, 0)->v;
}

/* The idx-th field `num` of m as a message. */
static struct pbm sub(const struct pbm *m, uint32_t num, size_t idx)
{
	const struct pbf *f = get(m, num, idx);

	assert_int_equal(f->wire, PB_LEN);
	return parse(f->p, f->v);
}

/* A string field (at most once; "" when absent) as a NUL-terminated copy in `buf`. */
static const char *str_of(const struct pbm *m, uint32_t num, char *buf, size_t size)
{
	const struct pbf *f;

	assert_true(count(m, num) <= 1);
	if (!count(m, num))
		return "";
	f = get(m, num, 0);
	assert_int_equal(f->wire, PB_LEN);
	assert_true(f->v < size);
	memcpy(buf, f->p, f->v);
	buf[f->v] = 0;
	return buf;
}

/* A packed repeated varint field (at most once) into out; returns how many. */
static size_t packed(const struct pbm *m, uint32_t num, uint64_t *out, size_t max)
{
	const struct pbf *f;
	const uint8_t *p, *end;
	size_t n = 0;

	assert_true(count(m, num) <= 1);
	if (!count(m, num))
		return 0;
	f = get(m, num, 0);
	assert_int_equal(f->wire, PB_LEN);
	for (p = f->p, end = p + f->v; p < end; n++) {
		assert_true(n < max);
		out[n] = rd_varint(&p, end);
	}
	return n;
}

/* --- the request, by opentelemetry-proto v1.11.0's numbers ------------------------ */

/* ProfilesDictionary */
enum { D_MAPPING = 1, D_LOCATION, D_FUNCTION, D_LINK, D_STRING, D_ATTRIBUTE, D_STACK };

struct req {
	struct pbm top, resource, scope, profile, dict;
	char *strings[256];
	size_t nstrings;
	bool *str_used; /* which string_table entries something refers to */
};

/* string_table[i], checking the index and noting the reference. */
static const char *S(struct req *r, uint64_t i)
{
	assert_true(i < r->nstrings);
	r->str_used[i] = true;
	return r->strings[i];
}

/* Decode a request and check its frame: one ResourceProfiles with one ScopeProfiles with
 * one Profile, and a dictionary whose tables all begin with their zero entry. */
static void decode(const void *buf, size_t len, struct req *r)
{
	struct pbm rp, sp, link;

	memset(r, 0, sizeof(*r));
	r->top = parse(buf, len);
	assert_int_equal(r->top.n, 2);
	assert_int_equal(count(&r->top, 1), 1); /* resource_profiles */
	assert_int_equal(count(&r->top, 2), 1); /* dictionary */
	rp = sub(&r->top, 1, 0);
	assert_int_equal(rp.n, 2);
	r->resource = sub(&rp, 1, 0);
	assert_int_equal(count(&rp, 2), 1); /* scope_profiles */
	sp = sub(&rp, 2, 0);
	assert_int_equal(sp.n, 2);
	r->scope = sub(&sp, 1, 0);
	assert_int_equal(count(&sp, 2), 1); /* profiles */
	r->profile = sub(&sp, 2, 0);
	r->dict = sub(&r->top, 2, 0);

	for (uint32_t t = D_MAPPING; t <= D_STACK; t++)
		assert_true(count(&r->dict, t) >= 1);
	/* zero entries: empty messages, "" and the full-length zero link */
	assert_int_equal(get(&r->dict, D_MAPPING, 0)->v, 0);
	assert_int_equal(count(&r->dict, D_MAPPING), 1); /* Python frames have no mapping */
	assert_int_equal(get(&r->dict, D_LOCATION, 0)->v, 0);
	assert_int_equal(get(&r->dict, D_FUNCTION, 0)->v, 0);
	assert_int_equal(get(&r->dict, D_STRING, 0)->v, 0);
	assert_int_equal(get(&r->dict, D_ATTRIBUTE, 0)->v, 0);
	assert_int_equal(get(&r->dict, D_STACK, 0)->v, 0);
	assert_int_equal(count(&r->dict, D_LINK), 1);
	link = sub(&r->dict, D_LINK, 0);
	assert_int_equal(link.n, 2);
	assert_int_equal(get(&link, 1, 0)->v, 16);
	assert_memory_equal(get(&link, 1, 0)->p, (uint8_t[16]){ 0 }, 16);
	assert_int_equal(get(&link, 2, 0)->v, 8);
	assert_memory_equal(get(&link, 2, 0)->p, (uint8_t[8]){ 0 }, 8);

	r->nstrings = count(&r->dict, D_STRING);
	assert_true(r->nstrings <= sizeof(r->strings) / sizeof(r->strings[0]));
	for (size_t i = 0; i < r->nstrings; i++) {
		const struct pbf *f = get(&r->dict, D_STRING, i);

		r->strings[i] = calloc(1, f->v + 1);
		assert_non_null(r->strings[i]);
		memcpy(r->strings[i], f->p, f->v);
		assert_int_equal(strlen(r->strings[i]), f->v); /* no NUL inside */
		for (size_t j = 0; j < i; j++)		       /* no duplicates */
			assert_string_not_equal(r->strings[i], r->strings[j]);
	}
	r->str_used = calloc(r->nstrings, sizeof(*r->str_used));
	assert_non_null(r->str_used);
	r->str_used[0] = true;
}

static void req_free(struct req *r)
{
	for (size_t i = 0; i < r->nstrings; i++)
		free(r->strings[i]);
	free(r->str_used);
	arena_free();
}

/* Resource attribute `key`: its AnyValue (must be there once), or NULL when absent. */
static bool resource_attr(struct req *r, const char *key, struct pbm *value)
{
	char buf[256];
	bool found = false;

	for (size_t i = 0; i < count(&r->resource, 1); i++) {
		struct pbm kv = sub(&r->resource, 1, i);

		if (strcmp(str_of(&kv, 1, buf, sizeof(buf)), key))
			continue;
		assert_false(found);
		found = true;
		*value = sub(&kv, 2, 0);
	}
	return found;
}

static const char *any_str(const struct pbm *v, char *buf, size_t size)
{
	assert_int_equal(v->n, 1);
	assert_int_equal(v->f[0].num, 1); /* string_value */
	return str_of(v, 1, buf, size);
}

static int64_t any_int(const struct pbm *v)
{
	assert_int_equal(v->n, 1);
	assert_int_equal(v->f[0].num, 3); /* int_value */
	return (int64_t)v->f[0].v;
}

static const char *res_str(struct req *r, const char *key, char *buf, size_t size)
{
	struct pbm v;

	if (!resource_attr(r, key, &v))
		fail_msg("no resource attribute %s", key);
	return any_str(&v, buf, size);
}

static int64_t res_int(struct req *r, const char *key)
{
	struct pbm v;

	if (!resource_attr(r, key, &v))
		fail_msg("no resource attribute %s", key);
	return any_int(&v);
}

/* ValueType field `num` of the profile as "type/unit". */
static const char *value_type(struct req *r, uint32_t num, char *buf, size_t size)
{
	struct pbm vt;

	assert_int_equal(count(&r->profile, num), 1);
	vt = sub(&r->profile, num, 0);
	snprintf(buf, size, "%s/%s", S(r, uint_of(&vt, 1)), S(r, uint_of(&vt, 2)));
	return buf;
}

/* A sample decoded through the dictionary: frames root first as "name file:line", and
 * its attributes. */
struct dsample {
	char frames[16][160];
	size_t nframes;
	uint64_t value;
	int64_t thread_id;
	char thread_name[64];
};

struct tables {
	size_t nlocs, nfns, nattrs, nstacks;
	bool loc_used[64], fn_used[64], attr_used[64], stack_used[64];
};

static void function_text(struct req *r, struct tables *t, uint64_t fi, int64_t line, char *out,
			  size_t size)
{
	struct pbm fn;
	const char *name, *file, *sys;
	char want[400];

	assert_true(fi > 0 && fi < t->nfns);
	t->fn_used[fi] = true;
	fn = sub(&r->dict, D_FUNCTION, fi);
	name = S(r, uint_of(&fn, 1));
	sys = S(r, uint_of(&fn, 2));
	file = S(r, uint_of(&fn, 3));
	/* the system name is "file:qualname", as in the pprof writer */
	snprintf(want, sizeof(want), "%s:%s", file, name);
	assert_string_equal(sys, want);
	snprintf(out, size, "%s %s:%lld start %llu", name, file, (long long)line,
		 (unsigned long long)uint_of(&fn, 4));
}

/* The Location's one attribute is profile.frame.type = `want`. */
static void frame_type_is(struct req *r, struct tables *t, const struct pbm *loc, const char *want)
{
	uint64_t ai[2];
	struct pbm kvu, v;
	char buf[64];

	assert_int_equal(packed(loc, 4, ai, 2), 1);
	assert_true(ai[0] > 0 && ai[0] < t->nattrs);
	t->attr_used[ai[0]] = true;
	kvu = sub(&r->dict, D_ATTRIBUTE, ai[0]);
	assert_string_equal(S(r, uint_of(&kvu, 1)), "profile.frame.type");
	v = sub(&kvu, 2, 0);
	assert_string_equal(any_str(&v, buf, sizeof(buf)), want);
}

static void decode_sample(struct req *r, struct tables *t, size_t i, struct dsample *d)
{
	struct pbm s = sub(&r->profile, 2, i), st;
	uint64_t locs[16], attrs[4], vals[2], si;
	size_t nlocs, nattrs;
	char buf[128];

	memset(d, 0, sizeof(*d));
	d->thread_id = -1;
	for (size_t k = 0; k < s.n; k++) /* only stack_index, attribute_indices, values */
		assert_true(s.f[k].num == 1 || s.f[k].num == 2 || s.f[k].num == 4);
	si = uint_of(&s, 1);
	assert_true(si > 0 && si < t->nstacks);
	t->stack_used[si] = true;
	st = sub(&r->dict, D_STACK, si);
	nlocs = packed(&st, 1, locs, 16);
	assert_true(nlocs > 0);
	for (size_t k = 0; k < nlocs; k++) { /* leaf first on the wire */
		struct pbm loc, line;

		assert_true(locs[k] > 0 && locs[k] < t->nlocs);
		t->loc_used[locs[k]] = true;
		loc = sub(&r->dict, D_LOCATION, locs[k]);
		/* a Python frame: its line and its frame type, no mapping, no address */
		assert_int_equal(loc.n, 2);
		assert_int_equal(count(&loc, 3), 1);
		frame_type_is(r, t, &loc, "cpython");
		line = sub(&loc, 3, 0);
		function_text(r, t, uint_of(&line, 1), (int64_t)uint_of(&line, 2),
			      d->frames[nlocs - 1 - k], sizeof(d->frames[0]));
	}
	d->nframes = nlocs;
	nattrs = packed(&s, 2, attrs, 4);
	assert_int_equal(nattrs, 2);
	for (size_t k = 0; k < nattrs; k++) {
		struct pbm kvu, v;
		const char *key;

		assert_true(attrs[k] > 0 && attrs[k] < t->nattrs);
		t->attr_used[attrs[k]] = true;
		kvu = sub(&r->dict, D_ATTRIBUTE, attrs[k]);
		key = S(r, uint_of(&kvu, 1));
		v = sub(&kvu, 2, 0);
		if (!strcmp(key, "thread.id")) {
			d->thread_id = any_int(&v);
		} else {
			assert_string_equal(key, "thread.name");
			snprintf(d->thread_name, sizeof(d->thread_name), "%s",
				 any_str(&v, buf, sizeof(buf)));
		}
	}
	assert_true(d->thread_id >= 0 && d->thread_name[0]);
	assert_int_equal(packed(&s, 4, vals, 2), 1);
	d->value = vals[0];
}

/* Decode every sample, then check the tables: no entry that nothing refers to, no two
 * entries alike. */
static size_t decode_samples(struct req *r, struct dsample *out, size_t max)
{
	struct tables t = { .nlocs = count(&r->dict, D_LOCATION),
			    .nfns = count(&r->dict, D_FUNCTION),
			    .nattrs = count(&r->dict, D_ATTRIBUTE),
			    .nstacks = count(&r->dict, D_STACK) };
	size_t n = count(&r->profile, 2);
	uint32_t tables[] = { D_LOCATION, D_FUNCTION, D_ATTRIBUTE, D_STACK };

	assert_true(n <= max && t.nlocs <= 64 && t.nfns <= 64 && t.nattrs <= 64 && t.nstacks <= 64);
	for (size_t i = 0; i < n; i++)
		decode_sample(r, &t, i, &out[i]);
	for (size_t i = 1; i < t.nlocs; i++)
		assert_true(t.loc_used[i]);
	for (size_t i = 1; i < t.nfns; i++)
		assert_true(t.fn_used[i]);
	for (size_t i = 1; i < t.nattrs; i++)
		assert_true(t.attr_used[i]);
	for (size_t i = 1; i < t.nstacks; i++)
		assert_true(t.stack_used[i]);
	for (size_t k = 0; k < sizeof(tables) / sizeof(tables[0]); k++) {
		size_t nt = count(&r->dict, tables[k]);

		for (size_t i = 1; i < nt; i++)
			for (size_t j = 1; j < i; j++) {
				const struct pbf *a = get(&r->dict, tables[k], i),
						 *b = get(&r->dict, tables[k], j);

				assert_false(a->v == b->v && !memcmp(a->p, b->p, a->v));
			}
	}
	return n;
}

static char *encode(struct fx *fx, const struct out_otlp_opts *o, size_t *len)
{
	void *buf = NULL;

	assert_int_equal(out_otlp_encode(fx->p, o, &buf, len), 0);
	assert_non_null(buf);
	return buf;
}

/* The sample whose thread and root-first frame texts are these, or NULL. */
static const struct dsample *find(const struct dsample *s, size_t n, int64_t tid,
				  const char *const *frames, size_t nframes)
{
	for (size_t i = 0; i < n; i++) {
		bool eq = s[i].thread_id == tid && s[i].nframes == nframes;

		for (size_t k = 0; eq && k < nframes; k++)
			eq = !strcmp(s[i].frames[k], frames[k]);
		if (eq)
			return &s[i];
	}
	return NULL;
}

/* --- tests ---------------------------------------------------------------------------- */

static void test_pb_fixed64(void **state)
{
	struct strbuf sb = { 0 };

	(void)state;
	assert_int_equal(pb_fixed64(&sb, 3, 0), 0); /* proto3 default: left out */
	assert_int_equal(sb.len, 0);
	assert_int_equal(pb_fixed64(&sb, 3, 0x0102030405060708ull), 0);
	/* key (3 << 3 | 1), then the value little-endian */
	assert_int_equal(sb.len, 9);
	assert_memory_equal(sb.buf, "\x19\x08\x07\x06\x05\x04\x03\x02\x01", 9);
	strbuf_free(&sb);
}

static void test_otlp_request_of_one_process(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), b = fx_code(fx, "work", "/app.py", 20);
	struct out_otlp_opts o = { .proc = 0, .service = "svc", .host = "h1" };
	const char *ab[] = { "main /app.py:10 start 10", "work /app.py:20 start 20" };
	struct dsample s[8];
	char buf[256], me[32];
	struct pbm v;
	struct req r;
	size_t len, n;
	char *out;

	(void)state;
	assert_int_equal(prctl(PR_GET_NAME, me, 0, 0, 0), 0);
	fx_sample(fx, 101, (uint64_t[]){ a, b }, 2, 3);
	fx_sample(fx, 101, (uint64_t[]){ a }, 1, 1);
	fx_sample(fx, 0, (uint64_t[]){ a, b }, 2, 2); /* our own thread: a real name */
	out = encode(fx, &o, &len);
	decode(out, len, &r);

	/* the resource: the process, in the semantic conventions' names */
	assert_string_equal(res_str(&r, "service.name", buf, sizeof(buf)), "svc");
	assert_string_equal(res_str(&r, "host.name", buf, sizeof(buf)), "h1");
	assert_int_equal(res_int(&r, "process.pid"), getpid());
	assert_string_equal(res_str(&r, "process.executable.name", buf, sizeof(buf)), "proc");
	assert_string_equal(res_str(&r, "process.runtime.name", buf, sizeof(buf)), "cpython");
	assert_true(resource_attr(&r, "process.runtime.version", &v));
	assert_false(resource_attr(&r, "container.id", &v)); /* not in a container */
	assert_false(resource_attr(&r, "process.vpid", &v));
	assert_string_equal(str_of(&r.scope, 1, buf, sizeof(buf)), "pywalk");
	assert_string_equal(str_of(&r.scope, 2, buf, sizeof(buf)), PYWALK_VERSION);

	/* the profile: CPU time, 99 Hz, the window's start (fixed64) and length */
	assert_string_equal(value_type(&r, 1, buf, sizeof(buf)), "cpu/nanoseconds");
	assert_string_equal(value_type(&r, 5, buf, sizeof(buf)), "cpu/nanoseconds");
	assert_int_equal(uint_of(&r.profile, 6), 10101010);
	assert_int_equal(get(&r.profile, 3, 0)->wire, PB_I64);
	assert_int_equal(get(&r.profile, 3, 0)->v, 1700000000000000000ull);
	assert_int_equal(uint_of(&r.profile, 4), 2000000000);
	assert_int_equal(get(&r.profile, 7, 0)->v, 16); /* profile_id */
	assert_memory_not_equal(get(&r.profile, 7, 0)->p, (uint8_t[16]){ 0 }, 16);
	for (size_t i = 0; i < r.profile.n; i++) /* nothing past profile_id */
		assert_true(r.profile.f[i].num >= 1 && r.profile.f[i].num <= 7);

	/* one sample per (thread, stack), the value CPU time */
	n = decode_samples(&r, s, 8);
	assert_int_equal(n, 3);
	assert_int_equal(find(s, n, 101, ab, 2)->value, 3 * 10101010);
	assert_int_equal(find(s, n, 101, ab, 1)->value, 1 * 10101010);
	assert_int_equal(find(s, n, gettid(), ab, 2)->value, 2 * 10101010);
	assert_string_equal(find(s, n, 101, ab, 2)->thread_name, "?"); /* no such thread */
	assert_string_equal(find(s, n, gettid(), ab, 2)->thread_name, me);
	/* main>work of two threads is one Stack; a, b and main alone: 2 Locations, 2
	 * Functions; thread.id x2, thread.name x2, profile.frame.type cpython */
	assert_int_equal(count(&r.dict, D_STACK), 1 + 2);
	assert_int_equal(count(&r.dict, D_LOCATION), 1 + 2);
	assert_int_equal(count(&r.dict, D_FUNCTION), 1 + 2);
	assert_int_equal(count(&r.dict, D_ATTRIBUTE), 1 + 5);
	for (size_t i = 0; i < r.nstrings; i++) /* every string is referred to */
		assert_true(r.str_used[i]);
	req_free(&r);
	free(out);
	fx_free(fx);
}

/* A second process in the same profile (another target id; the same memory serves its
 * code objects): only the named one is written, with its container attributes. */
static void test_otlp_only_the_named_process(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), c = fx_code(fx, "other", "/b.py", 5);
	struct target t2 = fx->t;
	const char *cf[] = { "other /b.py:5 start 5" };
	struct dsample s[8];
	struct req r;
	char buf[256];
	size_t len, n;
	char *out;

	(void)state;
	t2.id = 2;
	t2.nspid = 7;
	t2.ver.major = 3;
	t2.ver.minor = 12;
	t2.ver.micro = 1;
	t2.ver.hexversion = 0x030c01f0;
	snprintf(t2.comm, sizeof(t2.comm), "second");
	snprintf(t2.service, sizeof(t2.service), "its-service");
	snprintf(t2.container, sizeof(t2.container), "0123456789abcdef");
	assert_int_equal(profile__add_target(fx->p, &t2), 0);
	fx_sample(fx, 101, (uint64_t[]){ a }, 1, 4);
	fx->t.id = 2;
	fx_sample(fx, 202, (uint64_t[]){ c }, 1, 5);
	fx->t.id = 1;
	assert_int_equal(profile__nprocesses(fx->p), 2);
	out = encode(fx, &(struct out_otlp_opts){ .proc = 1 }, &len);
	decode(out, len, &r);
	/* no service given: the process's own; no host: left out */
	assert_string_equal(res_str(&r, "service.name", buf, sizeof(buf)), "its-service");
	assert_false(resource_attr(&r, "host.name", &(struct pbm){ 0 }));
	assert_string_equal(res_str(&r, "process.executable.name", buf, sizeof(buf)), "second");
	assert_int_equal(res_int(&r, "process.vpid"), 7);
	assert_string_equal(res_str(&r, "container.id", buf, sizeof(buf)), "0123456789abcdef");
	assert_string_equal(res_str(&r, "process.runtime.version", buf, sizeof(buf)), "3.12.1");
	n = decode_samples(&r, s, 8);
	assert_int_equal(n, 1);
	assert_int_equal(find(s, n, 202, cf, 1)->value, 5 * 10101010);
	/* the other process's function is not in the dictionary either */
	assert_int_equal(count(&r.dict, D_FUNCTION), 1 + 1);
	for (size_t i = 0; i < r.nstrings; i++)
		assert_null(strstr(r.strings[i], "main"));
	req_free(&r);
	free(out);
	assert_int_equal(
		out_otlp_encode(fx->p, &(struct out_otlp_opts){ .proc = 2 }, (void **)&out, &len),
		-EINVAL);
	assert_null(out);
	fx_free(fx);
}

/* The agent encodes each process of a window from the list of its own stacks: the same
 * request as the process filter alone gives (its id aside, which is random). */
static void test_otlp_of_listed_stacks_is_the_process_filter(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), c = fx_code(fx, "other", "/b.py", 5);
	struct target t2 = fx->t;
	const struct agg *agg;
	struct dsample s1[8], s2[8];
	struct req r1, r2;
	uint32_t mine[8];
	size_t nmine = 0, len1, len2, n;
	char *out1, *out2;

	(void)state;
	t2.id = 2;
	snprintf(t2.comm, sizeof(t2.comm), "second");
	assert_int_equal(profile__add_target(fx->p, &t2), 0);
	fx_sample(fx, 101, (uint64_t[]){ a }, 1, 4);
	fx->t.id = 2;
	fx_sample(fx, 202, (uint64_t[]){ c }, 1, 5);
	fx_sample(fx, 202, (uint64_t[]){ a, c }, 2, 1);
	fx->t.id = 1;
	fx_sample(fx, 101, (uint64_t[]){ a, a }, 2, 2);
	agg = profile__agg(fx->p);
	for (size_t i = 0; i < agg__nstacks(agg); i++)
		if (agg__stack(agg, i)->proc == 1)
			mine[nmine++] = (uint32_t)i;
	assert_int_equal(nmine, 2);
	out1 = encode(fx, &(struct out_otlp_opts){ .proc = 1 }, &len1);
	out2 = encode(fx, &(struct out_otlp_opts){ .proc = 1, .stacks = mine, .nstacks = nmine },
		      &len2);
	assert_int_equal(len1, len2);
	decode(out1, len1, &r1);
	decode(out2, len2, &r2);
	n = decode_samples(&r1, s1, 8);
	assert_int_equal(n, 2);
	assert_int_equal(decode_samples(&r2, s2, 8), n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(s1[i].thread_id, s2[i].thread_id);
		assert_int_equal(s1[i].value, s2[i].value);
		assert_int_equal(s1[i].nframes, s2[i].nframes);
		for (size_t k = 0; k < s1[i].nframes; k++)
			assert_string_equal(s1[i].frames[k], s2[i].frames[k]);
	}
	assert_int_equal(count(&r2.dict, D_FUNCTION), 1 + 2);
	assert_int_equal(count(&r2.dict, D_LOCATION), 1 + 2);
	req_free(&r1);
	req_free(&r2);
	free(out1);
	free(out2);
	fx_free(fx);
}

/* Strict UTF-8 (no overlong forms, surrogates or NUL), as a Go receiver checks strings. */
static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		uint32_t cp;
		int extra = *p < 0x80		  ? 0
			    : (*p & 0xe0) == 0xc0 ? 1
			    : (*p & 0xf0) == 0xe0 ? 2
			    : (*p & 0xf8) == 0xf0 ? 3
						  : -1;

		if (extra < 0)
			return false;
		cp = extra ? *p & (0x3f >> extra) : *p;
		for (int k = 1; k <= extra; k++) {
			if ((p[k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[k] & 0x3f);
		}
		if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
		    (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += extra + 1;
	}
	return true;
}

static void test_otlp_hostile_names_are_valid_utf8(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "bad\xff");
	size_t nh = sizeof(fx_hostile) / sizeof(fx_hostile[0]), len, n;
	uint64_t root = fx_code(fx, "<module>", "/srv/app.py", 1);
	struct dsample s[16];
	char buf[256];
	struct req r;
	char *out;

	(void)state;
	/* a thread name is raw bytes from /proc: malformed UTF-8 becomes U+FFFD */
	assert_int_equal(prctl(PR_SET_NAME, "bad\xff\xfe", 0, 0, 0), 0);
	for (size_t i = 0; i < nh; i++)
		fx_sample(fx, 0, (uint64_t[]){ root, fx_code(fx, fx_hostile[i], fx_hostile[i], 7) },
			  2, 1);
	prctl(PR_SET_NAME, "test_out_otlp", 0, 0, 0);
	out = encode(fx, &(struct out_otlp_opts){ .proc = 0 }, &len);
	decode(out, len, &r);
	for (size_t i = 0; i < r.nstrings; i++)
		assert_true(valid_utf8(r.strings[i]));
	/* a binary format needs no escapes: every name arrives as it was (all valid here) */
	for (size_t i = 0; i < nh; i++) {
		bool found = false;

		for (size_t k = 0; k < r.nstrings; k++)
			found |= !strcmp(r.strings[k], fx_hostile[i]);
		assert_true(found);
	}
	assert_string_equal(res_str(&r, "process.executable.name", buf, sizeof(buf)),
			    "bad\xef\xbf\xbd");
	n = decode_samples(&r, s, 16);
	assert_int_equal(n, nh);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(s[i].thread_name, "bad\xef\xbf\xbd\xef\xbf\xbd");
	req_free(&r);
	free(out);
	fx_free(fx);
}

/* Without a rate a sample stands for no known CPU time: samples/count, and no period. */
static void test_otlp_without_a_rate_counts_samples(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10);
	struct dsample s[2];
	char buf[64];
	struct req r;
	size_t len;
	char *out;

	(void)state;
	profile__set_sampling(fx->p, 0, 1700000000000000000ull, 1700000001000000000ull);
	fx_sample(fx, 101, (uint64_t[]){ a }, 1, 6);
	out = encode(fx, &(struct out_otlp_opts){ .proc = 0 }, &len);
	decode(out, len, &r);
	assert_string_equal(value_type(&r, 1, buf, sizeof(buf)), "samples/count");
	assert_int_equal(count(&r.profile, 5), 0);
	assert_int_equal(count(&r.profile, 6), 0);
	assert_int_equal(uint_of(&r.profile, 4), 1000000000);
	assert_int_equal(decode_samples(&r, s, 2), 1);
	assert_int_equal(s[0].value, 6);
	req_free(&r);
	free(out);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pb_fixed64),
		cmocka_unit_test(test_otlp_request_of_one_process),
		cmocka_unit_test(test_otlp_only_the_named_process),
		cmocka_unit_test(test_otlp_of_listed_stacks_is_the_process_filter),
		cmocka_unit_test(test_otlp_hostile_names_are_valid_utf8),
		cmocka_unit_test(test_otlp_without_a_rate_counts_samples),
	};

	return cmocka_run_group_tests_name("out_otlp", tests, NULL, NULL);
}
