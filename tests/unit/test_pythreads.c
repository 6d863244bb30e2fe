// SPDX-License-Identifier: MIT
/* Unit tests for user/pystate/pythreads.c over synthetic target memory: the objects of a 3.12
 * process (managed dicts with tagged values), of a 3.13 one (inline values) and of a
 * free-threaded 3.14t one (32-byte object headers, the managed dict right before the object,
 * a string state word whose `interned` is a byte; every offset the table gives comes from
 * the build's own _Py_DebugOffsets) built by hand, from _PyRuntime to each Thread's _name
 * and _native_id; a 2-byte-wide name; and memory that lies (an entry count past its table, a
 * name that is not a str, a pointer into nothing), which must give an error or a thread left
 * unnamed, never a wrong name. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "inspect/pyver.h"
#include "pystate/pythreads.h"
#include "debug_offsets_314t.h"

#define BASE 0x100000ull
#define MEM_SIZE 65536

struct fake {
	uint8_t mem[MEM_SIZE];
	uint64_t top; /* next free address */
	unsigned int minor;
	unsigned int h; /* object header beyond the default build's 16 bytes: 0, or 16 (3.14t) */
	struct pythreads_src lay; /* the layout: string and module offsets, as the table gives */
	uint64_t dict_type, str_type, long_type, module_type, thread_type, runtime;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	if (addr < BASE || addr + len > BASE + MEM_SIZE)
		return -EFAULT;
	memcpy(buf, f->mem + (addr - BASE), len);
	return 0;
}

static uint64_t alloc(struct fake *f, size_t size)
{
	uint64_t a = f->top;

	f->top += (size + 15) & ~15ull;
	assert_true(f->top <= BASE + MEM_SIZE);
	return a;
}

static void put64(struct fake *f, uint64_t addr, uint64_t v)
{
	memcpy(f->mem + (addr - BASE), &v, 8);
}

static void put8(struct fake *f, uint64_t addr, uint8_t v)
{
	f->mem[addr - BASE] = v;
}

static uint64_t new_type(struct fake *f, uint64_t flags, uint64_t basicsize)
{
	uint64_t t = alloc(f, 1024);

	put64(f, t + 32 + f->h, basicsize);
	put64(f, t + 168 + f->h, flags);
	return t;
}

/* A compact str of `n` code units of `kind` bytes (1: ASCII). */
static uint64_t new_str(struct fake *f, const void *units, size_t n, unsigned int kind)
{
	const struct pythreads_src *l = &f->lay;
	uint64_t s = alloc(f, l->str_compact_data + n * kind + 4);
	uint32_t state = (kind | 1u << 3 | (kind == 1 ? 1u << 4 : 0)) << l->str_kind_shift;

	put64(f, s + 8 + f->h, f->str_type);
	put64(f, s + l->str_length, n);
	memcpy(f->mem + (s + l->str_state - BASE), &state, 4);
	memcpy(f->mem + (s + (kind == 1 ? l->str_ascii_data : l->str_compact_data) - BASE), units,
	       n * kind);
	return s;
}

static uint64_t ascii(struct fake *f, const char *s)
{
	return new_str(f, s, strlen(s), 1);
}

static uint64_t new_long(struct fake *f, uint32_t v)
{
	uint64_t o = alloc(f, 32 + f->h);

	put64(f, o + 8 + f->h, f->long_type);
	put64(f, o + 16 + f->h, 1 << 3); /* one digit, positive (3.12+ lv_tag) */
	memcpy(f->mem + (o + 24 + f->h - BASE), &v, 4);
	return o;
}

/* A keys object of n entries (kind 0: general (hash, key, value), 1: unicode). */
static uint64_t new_keys(struct fake *f, unsigned int kind, size_t n, const uint64_t *keys,
			 const uint64_t *values)
{
	size_t esize = kind ? 16 : 24;
	uint64_t k = alloc(f, 32 + 8 + n * esize), e = k + 32 + 8;

	put8(f, k + 8, 3); /* 8 slots */
	put8(f, k + 9, 3); /* 8 index bytes */
	put8(f, k + 10, (uint8_t)kind);
	put64(f, k + 24, n);
	for (size_t i = 0; i < n; i++) {
		put64(f, e + i * esize + (kind ? 0 : 8), keys[i]);
		put64(f, e + i * esize + (kind ? 8 : 16), values ? values[i] : 0);
	}
	return k;
}

static uint64_t new_dict(struct fake *f, uint64_t keys)
{
	uint64_t d = alloc(f, 48 + f->h);

	put64(f, d + 8 + f->h, f->dict_type);
	put64(f, d + 32 + f->h, keys);
	return d;
}

/* A Thread whose _name and _native_id are in its values (3.12: tagged pointer at obj-24;
 * 3.13: inline after the object; 3.14t: in a dict whose pointer is right before the
 * object, as a free-threaded build keeps no GC links there). */
static uint64_t new_thread(struct fake *f, uint64_t name, uint64_t native)
{
	uint64_t pre = alloc(f, 24 + 16 + f->h + 8 + 16), obj = pre + 24;

	put64(f, obj + 8 + f->h, f->thread_type);
	if (f->h) {
		uint64_t keys[2], values[2] = { name, native };

		keys[0] = ascii(f, "_name");
		keys[1] = ascii(f, "_native_id");
		put64(f, obj - 8, new_dict(f, new_keys(f, 1, 2, keys, values)));
	} else if (f->minor >= 13) {
		put8(f, obj + 16 + 3, 1); /* valid */
		put64(f, obj + 16 + 8, name);
		put64(f, obj + 16 + 16, native);
	} else {
		uint64_t values = alloc(f, 16);

		put64(f, values, name);
		put64(f, values + 8, native);
		put64(f, obj - 24, values - 1);
	}
	return obj;
}

/* The default build's layout for `minor` (3.12, 3.13: what pyver.c's tables give). */
static const struct pythreads_src default_layout = { .runtime_interp_head = 40,
						     .interp_next = 0,
						     .mod = { 944, 880 },
						     .str_length = 16,
						     .str_state = 32,
						     .str_ascii_data = 40,
						     .str_compact_data = 56,
						     .str_kind_shift = 2,
						     .ob_type = 8 };

/* The types of a process of version `minor` and layout `lay` (first: names are made with
 * them). */
static void init_layout(struct fake *f, unsigned int minor, const struct pythreads_src *lay)
{
	uint64_t attr_keys[2];

	memset(f, 0, sizeof(*f));
	f->top = BASE + 16;
	f->minor = minor;
	f->lay = *lay;
	f->lay.minor = minor;
	f->h = lay->ob_type - 8u;
	f->dict_type = new_type(f, 1ull << 29, 48 + f->h);
	f->str_type = new_type(f, 1ull << 28, 40 + f->h);
	f->long_type = new_type(f, 1ull << 24, 32 + f->h);
	f->module_type = new_type(f, 0, 48 + f->h);
	f->thread_type = new_type(f, minor >= 13 && !f->h ? 1u << 2 | 1u << 4 : 1u << 4, 16 + f->h);
	attr_keys[0] = ascii(f, "_name");
	attr_keys[1] = ascii(f, "_native_id");
	put64(f, f->thread_type + f->lay.mod.ht_cached_keys, new_keys(f, 1, 2, attr_keys, NULL));
}

static void init(struct fake *f, unsigned int minor)
{
	init_layout(f, minor, &default_layout);
}

/* 3.14t: every offset pythreads takes from the target's table comes from the free-threaded
 * 3.14.7 build's own _Py_DebugOffsets, through pyver.c as for a live target. */
static void init_314t(struct fake *f)
{
	static uint8_t dbg[1024];
	struct pythreads_src lay;
	struct py_version v;
	char why[256] = "";

	memset(dbg, 0, sizeof(dbg));
	memcpy(dbg, "xdebugpy", 8);
	*(uint64_t *)(void *)(dbg + 8) = 0x030e07f0;
	*(uint64_t *)(void *)(dbg + 16) = 1; /* free_threaded */
	for (size_t i = 0; i < sizeof(f314t) / sizeof(f314t[0]); i++)
		memcpy(dbg + f314t[i].pos, &f314t[i].value, 8);
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	assert_true(v.free_threaded);
	lay = (struct pythreads_src){ .runtime_interp_head = v.cfg.off.runtime_interp_head,
				      .interp_next = v.cfg.off.interp_next,
				      .mod = v.mod,
				      .str_length = v.obj.str_length,
				      .str_state = v.obj.str_state,
				      .str_ascii_data = v.obj.str_ascii_data,
				      .str_compact_data = v.obj.str_compact_data,
				      .str_kind_shift = v.obj.str_kind_shift,
				      .ob_type = v.obj.ob_type };
	assert_int_equal(lay.ob_type, 24);
	init_layout(f, v.minor, &lay);
}

/* The rest: threading._active holding n threads named names[i], native ids 100 + i;
 * *active gets the _active dict, *thread the threads. */
static void build(struct fake *f, size_t n, const uint64_t *names, uint64_t *active,
		  uint64_t *threads, struct pythreads_src *src)
{
	uint64_t idents[8], key, module, interp, modules, mkeys[2], mvals[2];

	for (size_t i = 0; i < n; i++) {
		idents[i] = new_long(f, 7000 + (uint32_t)i);
		threads[i] = new_thread(f, names[i], new_long(f, 100 + (uint32_t)i));
	}
	*active = new_dict(f, new_keys(f, 0, n, idents, threads));
	key = ascii(f, "_active");
	module = alloc(f, 32 + f->h);
	put64(f, module + 8 + f->h, f->module_type);
	put64(f, module + 16 + f->h, new_dict(f, new_keys(f, 1, 1, &key, active)));
	mkeys[0] = ascii(f, "sys");
	mkeys[1] = ascii(f, "threading");
	mvals[0] = new_dict(f, new_keys(f, 1, 0, NULL, NULL));
	mvals[1] = module;
	modules = new_dict(f, new_keys(f, 1, 2, mkeys, mvals));
	interp = alloc(f, f->lay.mod.interp_modules + 8u);
	put64(f, interp + f->lay.mod.interp_modules, modules);
	f->runtime = alloc(f, f->lay.runtime_interp_head + 8u);
	put64(f, f->runtime + f->lay.runtime_interp_head, interp);
	*src = f->lay;
	src->read = fake_read;
	src->ctx = f;
	src->runtime_addr = f->runtime;
}

static struct fake fk;
static struct pythread_name out[8];
static const uint16_t wide[] = { 'w', 0xfc, 0x2713 }; /* "wü✓" */

/* Names of a process whose types init*() made. */
static void names_are_read(void)
{
	uint64_t names[2], active, threads[2];
	struct pythreads_src src;
	struct pythreads_result res;

	names[0] = ascii(&fk, "MainThread");
	names[1] = new_str(&fk, wide, 3, 2);
	build(&fk, 2, names, &active, threads, &src);
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(res.nthreads, 2);
	assert_int_equal(res.named, 2);
	assert_int_equal(res.unreadable, 0);
	assert_int_equal(out[0].native_id, 100);
	assert_string_equal(out[0].name, "MainThread");
	assert_int_equal(out[1].native_id, 101);
	assert_string_equal(out[1].name, "w\xc3\xbc\xe2\x9c\x93");
	/* the _active dict is remembered, and tried first next time */
	assert_int_equal(src.active_dict, active);
	/* no interpreter any more: found by the dict alone */
	put64(&fk, fk.runtime + fk.lay.runtime_interp_head, 0);
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(res.named, 2);
}

/* A caller's budget of reads is kept to, and says when it cut the read short. */
static void test_read_budget(void **state)
{
	uint64_t names[2], active, threads[2];
	struct pythreads_src src;
	struct pythreads_result res;
	size_t all;

	(void)state;
	init(&fk, 12);
	names[0] = ascii(&fk, "MainThread");
	names[1] = ascii(&fk, "other");
	build(&fk, 2, names, &active, threads, &src);
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(res.named, 2);
	assert_false(res.cut);
	all = res.reads;
	assert_true(all > 4);
	for (uint32_t budget = 1; budget < all; budget++) {
		src.active_dict = 0; /* looked up again each time */
		src.max_reads = budget;
		pythreads_read(&src, out, 8, &res);
		assert_int_equal(res.reads, budget);
		assert_true(res.cut);
		assert_true(res.named < 2);
	}
	src.active_dict = 0;
	src.max_reads = (uint32_t)all;
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(res.named, 2);
	assert_int_equal(res.reads, all);
}

static void test_names_3_12_tagged_values(void **state)
{
	(void)state;
	init(&fk, 12);
	names_are_read();
}

static void test_names_3_13_inline_values(void **state)
{
	(void)state;
	init(&fk, 13);
	names_are_read();
}

static void test_names_314t_free_threaded(void **state)
{
	(void)state;
	init_314t(&fk);
	names_are_read();
}

/* A name longer than kept is cut and marked. */
static void test_long_name_is_cut(void **state)
{
	char longname[200];
	uint64_t names[1], active, threads[1];
	struct pythreads_src src;
	struct pythreads_result res;

	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	init(&fk, 12);
	names[0] = ascii(&fk, longname);
	build(&fk, 1, names, &active, threads, &src);
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(strlen(out[0].name), PYTHREADS_NAME_CHARS + 3);
	assert_memory_equal(out[0].name + PYTHREADS_NAME_CHARS, "\xe2\x80\xa6", 3);
}

/* Memory that lies gives an error or an unnamed thread, never a wrong name. */
static void test_lying_memory(void **state)
{
	uint64_t names[2], active, threads[2], keys;
	struct pythreads_src src;
	struct pythreads_result res;

	(void)state;
	init(&fk, 12);
	names[0] = ascii(&fk, "ok");
	names[1] = fk.long_type; /* not a str: a type object */
	build(&fk, 2, names, &active, threads, &src);
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(res.nthreads, 2);
	assert_int_equal(res.named, 1);
	assert_int_equal(res.unreadable, 1);
	assert_string_equal(out[0].name, "ok");

	/* an entry count past the table's size */
	memcpy(&keys, fk.mem + (active + 32 - BASE), 8);
	put64(&fk, keys + 24, 9);
	src.active_dict = 0;
	assert_int_equal(pythreads_read(&src, out, 8, &res), -EPROTO);
	assert_int_equal(res.named, 0);
	assert_int_equal(src.active_dict, 0);
	put64(&fk, keys + 24, 2);

	/* a Thread whose dict pointer points into nothing */
	put64(&fk, threads[0] - 24, 0x7777777777ull - 1);
	assert_int_equal(pythreads_read(&src, out, 8, &res), 0);
	assert_int_equal(res.named, 0);
	assert_int_equal(res.unreadable, 2);

	/* threading not imported: sys.modules without it */
	init(&fk, 12);
	build(&fk, 0, NULL, &active, threads, &src);
	{
		uint64_t modules, mkeys;

		memcpy(&modules, fk.mem + (fk.runtime + 40 - BASE), 8);
		memcpy(&modules, fk.mem + (modules + 944 - BASE), 8);
		memcpy(&mkeys, fk.mem + (modules + 32 - BASE), 8);
		put64(&fk, mkeys + 24, 1); /* only "sys" */
	}
	assert_int_equal(pythreads_read(&src, out, 8, &res), -ENOENT);
	/* an unsupported layout is refused before any read */
	src.minor = 9;
	assert_int_equal(pythreads_read(&src, out, 8, &res), -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_3_12_tagged_values),
		cmocka_unit_test(test_names_3_13_inline_values),
		cmocka_unit_test(test_names_314t_free_threaded),
		cmocka_unit_test(test_long_name_is_cut),
		cmocka_unit_test(test_read_budget),
		cmocka_unit_test(test_lying_memory),
	};

	return cmocka_run_group_tests_name("pythreads", tests, NULL, NULL);
}
