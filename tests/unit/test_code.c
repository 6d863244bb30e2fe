// SPDX-License-Identifier: MIT
/* The sampler's code-object capture (bpf/code.h) over synthetic memory, and what the
 * symbolizer makes of its records (symtab__add_record). The fake code, str and bytes
 * objects are laid out per the 3.10-3.12 tables of pyver.c, in an arena of this process:
 * the capture reads it through a hook that can refuse ranges (what the sampler could not
 * read), while the symbolizer, given this process's PID, reads the same bytes with
 * process_vm_readv (the target is still alive), or, given a PID that does not exist,
 * has only the record (the target is gone). */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* ---- the arena and the sampler's read hook ------------------------------------------- */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ARENA_SIZE (1 << 20)
static uint8_t arena[ARENA_SIZE] __attribute__((aligned(64)));
static size_t arena_used;

/* Ranges the sampler cannot read (a page not present at sample time, say). */
static struct {
	uint64_t start, end;
} holes[8];
static size_t nholes;

static int mem_read(void *dst, uint32_t size, uint64_t addr)
{
	uint64_t base = (uint64_t)(uintptr_t)arena;

	if (addr < base || addr + size > base + arena_used || addr + size < addr)
		return -14; /* -EFAULT */
	for (size_t i = 0; i < nholes; i++)
		if (addr < holes[i].end && addr + size > holes[i].start)
			return -14;
	memcpy(dst, (const void *)(uintptr_t)addr, size);
	return 0;
}

#define PW_READ_USER(dst, size, addr) mem_read((dst), (size), (addr))
#include "code.h"
#include "inspect/pyver.h"
#include "symbolize/symtab.h"

static uint64_t alloc(size_t size)
{
	uint64_t addr = (uint64_t)(uintptr_t)(arena + arena_used);

	/* every object has room for the headers the capture and the tag fold read */
	size = size < 128 ? 128 : size;
	arena_used += (size + 63) & ~(size_t)63;
	assert_true(arena_used <= ARENA_SIZE);
	return addr;
}

static void *at(uint64_t addr)
{
	return (void *)(uintptr_t)addr;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(at(addr), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(at(addr), &v, 4);
}

static void hole(uint64_t addr, size_t size)
{
	assert_true(nholes < ARRAY_SIZE(holes));
	holes[nholes].start = addr;
	holes[nholes++].end = addr + size;
}

/* ---- CPython objects under one version's layout -------------------------------------- */

#define CODE_TYPE 0x7f0000001000ull /* "PyCode_Type" */
#define STR_TYPE 0x7f0000002000ull

static struct py_version ver; /* cfg (what the sampler gets) and obj (the symbolizer's) */
static uint64_t next_version = 1;

static int use_version(unsigned int minor)
{
	memset(arena, 0, arena_used);
	arena_used = 0;
	nholes = 0;
	if (pyver_table(minor, &ver))
		return -1;
	ver.cfg.target = 7;
	return 0;
}

static int setup_310(void **state)
{
	(void)state;
	return use_version(10);
}

static int setup_311(void **state)
{
	(void)state;
	return use_version(11);
}

static int setup_312(void **state)
{
	(void)state;
	return use_version(12);
}

/* A compact str of n code points of `kind` bytes; ASCII when kind 1 and all are < 128. */
static uint64_t str_of(const uint32_t *cps, size_t n, unsigned int kind)
{
	const struct py_objlayout *l = &ver.obj;
	bool ascii = kind == 1;
	uint64_t o, data;
	uint32_t state;

	for (size_t i = 0; i < n; i++)
		ascii &= cps[i] < 0x80;
	o = alloc(l->str_compact_data + (n + 1) * kind);
	data = o + (ascii ? l->str_ascii_data : l->str_compact_data);
	put64(o + 8, STR_TYPE);
	put64(o + l->str_length, n);
	state = kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0); /* kind, compact, ascii */
	put32(o + l->str_state, state);
	for (size_t i = 0; i < n; i++) {
		if (kind == 1)
			((uint8_t *)at(data))[i] = (uint8_t)cps[i];
		else if (kind == 2)
			memcpy(at(data + 2 * i), &(uint16_t){ (uint16_t)cps[i] }, 2);
		else
			memcpy(at(data + 4 * i), &cps[i], 4);
	}
	return o;
}

/* The str of a UTF-8 literal, in the narrowest kind that holds it (as CPython does). */
static uint64_t str(const char *s)
{
	uint32_t cps[8192], max = 0;
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; n++) {
		int extra = *p < 0x80 ? 0 : *p < 0xe0 ? 1 : *p < 0xf0 ? 2 : 3;
		uint32_t cp = extra ? *p & (0x3f >> extra) : *p;

		for (int k = 1; k <= extra; k++)
			cp = cp << 6 | (p[k] & 0x3f);
		p += extra + 1;
		assert_true(n < ARRAY_SIZE(cps));
		cps[n] = cp;
		max = cp > max ? cp : max;
	}
	return str_of(cps, n, max < 0x100 ? 1 : max < 0x10000 ? 2 : 4);
}

/* `n` copies of one character (kind per the character). */
static uint64_t str_repeat(uint32_t cp, size_t n)
{
	static uint32_t cps[8192];

	assert_true(n <= ARRAY_SIZE(cps));
	for (size_t i = 0; i < n; i++)
		cps[i] = cp;
	return str_of(cps, n, cp < 0x100 ? 1 : cp < 0x10000 ? 2 : 4);
}

static uint64_t bytes(const uint8_t *data, size_t n)
{
	uint64_t o = alloc(ver.obj.bytes_data + n + 1);

	put64(o + ver.obj.bytes_size, n);
	if (n)
		memcpy(at(o + ver.obj.bytes_data), data, n);
	return o;
}

/* A line table saying instruction i (code units) is on line firstlineno + step * (i + 1),
 * for `units` instructions: in the location format (3.11+) ONE_LINE entries of 3 bytes, in
 * PEP 626 (3.10) one (2 bytes, +step lines) pair each. Returns its size. */
static size_t line_table_step(uint8_t *out, size_t units, unsigned int step)
{
	size_t n = 0;

	assert_true(step <= 2);
	for (size_t i = 0; i < units; i++) {
		if (ver.obj.lt_format == LINETABLE_LOCATION) {
			/* entry start, ONE_LINE<step>, 1 code unit */
			out[n++] = 0x80 | (10 + step) << 3;
			out[n++] = 1; /* start column */
			out[n++] = 2; /* end column */
		} else {
			out[n++] = 2;		  /* bytes */
			out[n++] = (uint8_t)step; /* line delta */
		}
	}
	return n;
}

static size_t line_table(uint8_t *out, size_t units)
{
	return line_table_step(out, units, 1);
}

static size_t entry_size(void)
{
	return ver.obj.lt_format == LINETABLE_LOCATION ? 3 : 2;
}

/* A code object of this version: its tag window holds values unique to it. */
static uint64_t code_obj(uint64_t name, uint64_t file, uint64_t linetable, int firstlineno)
{
	const struct py_objlayout *l = &ver.obj;
	const struct pw_offsets *o = &ver.cfg.off;
	uint64_t co = alloc(256);

	put64(co + 8, CODE_TYPE);
	/* whatever the window covers besides the fields below: a per-object value, as
	 * co_version (3.12+) or the co_names/co_consts pointers (3.10) are */
	for (unsigned int i = 0; i < o->code_tag_size / 8; i++)
		put64(co + o->code_tag + 8 * i, next_version++ << 8 | i);
	put64(co + l->co_filename, file);
	put64(co + l->co_name, name);
	put64(co + l->co_qualname, name);
	put64(co + l->co_linetable, linetable);
	put32(co + l->co_firstlineno, (uint32_t)firstlineno);
	return co;
}

/* The tag the walker folds from the code object at sample time (bpf/walk.h). */
static uint32_t sample_tag(uint64_t co)
{
	const struct pw_offsets *o = &ver.cfg.off;
	__u64 words[PW_CODE_TAG_WORDS] = { 0 }, name[PW_NAME_TAG_SIZE / 8] = { 0 };

	assert_int_equal(mem_read(words, o->code_tag_size, co + o->code_tag), 0);
	if (ver.cfg.code_tag_name >= PW_CODE_TAG_WORDS)
		return pw_code_tag(words, o->code_tag_mask, NULL);
	assert_int_equal(
		mem_read(name, sizeof(name), words[ver.cfg.code_tag_name] + PW_NAME_TAG_START), 0);
	return pw_code_tag(words, o->code_tag_mask, name);
}

/* ---- capture -> record -> symbol ----------------------------------------------------- */

static uint8_t rec[PW_CODE_REC_BUF];

static const struct pw_code_hdr *hdr(void)
{
	return (const struct pw_code_hdr *)rec;
}

static uint32_t capture(uint64_t co)
{
	memset(rec, 0xa5, sizeof(rec)); /* what the capture leaves unwritten shows */
	return pw_code_capture(&ver.cfg, 4242, co, sample_tag(co), rec);
}

/* A PID with no process: the symbolizer has only what the record carries. */
static pid_t gone_pid(void)
{
	return 0x3ffffff0; /* above PID_MAX_LIMIT */
}

static struct symtab_target target_for(pid_t pid)
{
	return (struct symtab_target){
		.id = ver.cfg.target, .pid = pid, .code_type = CODE_TYPE, .lay = &ver.obj
	};
}

/* Capture `co`, add the record to a fresh symbolizer for a target with `pid`, and resolve
 * the sampled frame: the handle (or a negative errno). The symtab is left in *out. */
static int64_t symbolize(uint64_t co, pid_t pid, struct symtab **out)
{
	struct symtab_target t = target_for(pid);
	struct symtab *st = symtab__new(0);
	uint32_t len = capture(co);
	int err;

	assert_non_null(st);
	assert_true(len > 0);
	*out = st;
	err = symtab__add_record(st, &t, rec, len);
	if (err)
		return err;
	return symtab__resolve(st, &t, co, hdr()->tag);
}

static const char *name_of(const struct symtab *st, int64_t h)
{
	return symtab__func_name(st, symtab__func(st, h));
}

static const char *file_of(const struct symtab *st, int64_t h)
{
	return symtab__func_file(st, symtab__func(st, h));
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_record_of_ascii_names_copies_header_names_and_line_table(void **state)
{
	const struct py_objlayout *l = &ver.obj;
	uint8_t lt[64];
	size_t ltn = line_table(lt, 10);
	uint64_t name = str("Outer.inner"), file = str("/srv/app/main.py");
	uint64_t co = code_obj(name, file, bytes(lt, ltn), 40);
	const uint8_t *p = rec + sizeof(struct pw_code_hdr);
	uint32_t len = capture(co);
	struct symtab *st;
	int64_t h;

	(void)state;
	assert_int_equal(hdr()->kind, PW_REC_CODE);
	assert_int_equal(hdr()->target, 7);
	assert_int_equal(hdr()->code, co);
	assert_int_equal(hdr()->pid, 4242);
	assert_int_equal(hdr()->tag, sample_tag(co));
	assert_int_equal(hdr()->flags, 0);
	assert_int_equal(hdr()->head_len, l->co_read_size);
	assert_int_equal(hdr()->name_len, l->str_ascii_data + 11);
	assert_int_equal(hdr()->file_len, l->str_ascii_data + 16);
	assert_int_equal(hdr()->lt_len, ltn);
	assert_int_equal(hdr()->lt_size, ltn);
	assert_int_equal(len, sizeof(struct pw_code_hdr) + hdr()->head_len + hdr()->name_len +
				      hdr()->file_len + hdr()->lt_len);
	/* the bytes are the objects' own, back to back */
	assert_memory_equal(p, at(co), hdr()->head_len);
	p += hdr()->head_len;
	assert_memory_equal(p, at(name), hdr()->name_len);
	p += hdr()->name_len;
	assert_memory_equal(p, at(file), hdr()->file_len);
	p += hdr()->file_len;
	assert_memory_equal(p, lt, ltn);

	h = symbolize(co, gone_pid(), &st);
	assert_true(h >= 0);
	assert_string_equal(name_of(st, h), "Outer.inner");
	assert_string_equal(file_of(st, h), "/srv/app/main.py");
	assert_int_equal(symtab__func_firstline(st, symtab__func(st, h)), 40);
	assert_int_equal(symtab__line(st, h, PW_INSTR_NONE), 40);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(symtab__line(st, h, i), 41 + (int)i);
	assert_int_equal(symtab__line(st, h, 10), 0); /* past the table */
	assert_int_equal(symtab__stats(st)->from_records, 1);
	assert_int_equal(symtab__stats(st)->from_memory, 0);
	symtab__free(st);
}

/* latin-1 (kind 1, not ASCII: data after the compact header), UCS-2 and UCS-4 names and
 * paths decode to the same UTF-8 the source had. */
static void test_record_names_of_every_str_kind_decode_to_utf8(void **state)
{
	static const char *const names[] = {
		"caf\xc3\xa9_\xc3\xbf",			 /* café_ÿ: kind 1, not ASCII */
		"\xe5\x87\xbd\xe6\x95\xb0.\xe2\x82\xac", /* 函数.€: kind 2 */
		"f\xf0\x9f\x94\xa5x",			 /* f🔥x: kind 4 */
	};
	static const unsigned int kinds[] = { 1, 2, 4 };
	static const size_t lens[] = { 6, 4, 3 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		uint64_t name = str(names[i]), file = str(names[(i + 1) % 3]);
		uint64_t co = code_obj(name, file, bytes(NULL, 0), 1);
		struct symtab *st;
		int64_t h = symbolize(co, gone_pid(), &st);

		assert_int_equal(hdr()->name_len, ver.obj.str_compact_data + lens[i] * kinds[i]);
		assert_true(h >= 0);
		assert_string_equal(name_of(st, h), names[i]);
		assert_string_equal(file_of(st, h), names[(i + 1) % 3]);
		symtab__free(st);
	}
}

/* A name the record cuts at PW_CODE_STR_MAX bytes: completed from the target while it
 * lives, else kept cut and marked; never longer than SYMTAB_MAX_STR. */
static void test_long_name_is_cut_in_the_record_and_completed_from_the_target(void **state)
{
	const struct py_objlayout *l = &ver.obj;
	uint64_t file = str("a.py");
	uint64_t name = str_repeat('n', 3000), wide = str_repeat(0x1f525, 700);
	uint64_t huge = str_repeat('h', SYMTAB_MAX_STR + 100);
	size_t in_rec = PW_CODE_STR_MAX - l->str_ascii_data;
	struct symtab *st;
	const char *s;
	int64_t h;

	(void)state;
	h = symbolize(code_obj(name, file, bytes(NULL, 0), 1), gone_pid(), &st);
	assert_int_equal(hdr()->name_len, PW_CODE_STR_MAX);
	assert_true(h >= 0);
	s = name_of(st, h);
	assert_int_equal(strlen(s), in_rec + 3); /* the characters copied, then U+2026 */
	assert_memory_equal(s + in_rec, "\xe2\x80\xa6", 3);
	assert_int_equal(strspn(s, "n"), in_rec);
	symtab__free(st);

	h = symbolize(code_obj(name, file, bytes(NULL, 0), 1), getpid(), &st);
	assert_true(h >= 0);
	assert_int_equal(strlen(name_of(st, h)), 3000);
	assert_int_equal(strspn(name_of(st, h), "n"), 3000);
	symtab__free(st);

	/* four bytes a character: the cut falls inside no character */
	h = symbolize(code_obj(wide, file, bytes(NULL, 0), 1), gone_pid(), &st);
	assert_int_equal(hdr()->name_len, PW_CODE_STR_MAX);
	assert_true(h >= 0);
	assert_int_equal(strlen(name_of(st, h)),
			 4 * ((PW_CODE_STR_MAX - l->str_compact_data) / 4) + 3);
	symtab__free(st);

	h = symbolize(code_obj(huge, file, bytes(NULL, 0), 1), getpid(), &st);
	assert_true(h >= 0);
	assert_int_equal(strlen(name_of(st, h)), SYMTAB_MAX_STR + 3);
	symtab__free(st);
}

/* A line table over PW_CODE_LINETABLE_MAX: the record carries its first part and its full
 * size; the rest is read from the target while it lives, else later lines are unknown. */
static void test_long_line_table_is_cut_in_the_record_and_completed_from_the_target(void **state)
{
	static uint8_t lt[24000];
	size_t units = sizeof(lt) / entry_size(), ltn = line_table(lt, units);
	size_t whole = PW_CODE_LINETABLE_MAX / entry_size(); /* entries the record holds */
	uint64_t co = code_obj(str("f"), str("a.py"), bytes(lt, ltn), 100);
	struct symtab *st;
	int64_t h;

	(void)state;
	h = symbolize(co, gone_pid(), &st);
	assert_int_equal(hdr()->lt_len, PW_CODE_LINETABLE_MAX);
	assert_int_equal(hdr()->lt_size, ltn);
	assert_true(hdr()->lt_len < hdr()->lt_size);
	assert_int_equal(hdr()->flags, 0);
	assert_true(h >= 0);
	assert_int_equal(symtab__line(st, h, 0), 101);
	assert_int_equal(symtab__line(st, h, (uint32_t)whole - 1), 100 + (int)whole);
	assert_int_equal(symtab__line(st, h, (uint32_t)whole + 10), 0);
	symtab__free(st);

	h = symbolize(co, getpid(), &st);
	assert_true(h >= 0);
	assert_int_equal(symtab__line(st, h, (uint32_t)whole + 10), 111 + (int)whole);
	assert_int_equal(symtab__line(st, h, (uint32_t)units - 1), 100 + (int)units);
	symtab__free(st);
}

/* The rest of a cut line table is read from the target only while the object there is the
 * one the sampler copied from (the size the record gives, the same first bytes): a code
 * object that lives a millisecond is gone by then, and the memory of its table may hold
 * another one, whose lines would be given to this function's instructions. */
static void test_cut_line_table_is_not_completed_from_another_object(void **state)
{
	static uint8_t lt[24000], other[24000];
	size_t units = sizeof(lt) / entry_size(), ltn = line_table(lt, units);
	size_t whole = PW_CODE_LINETABLE_MAX / entry_size();
	uint64_t table = bytes(lt, ltn), co = code_obj(str("f"), str("a.py"), table, 100);
	struct symtab_target t = target_for(getpid());
	struct symtab *st = symtab__new(0);
	uint32_t len = capture(co);
	int64_t h;

	(void)state;
	assert_true(hdr()->lt_len < hdr()->lt_size);
	/* freed, and its memory holds a table of the same size with other lines */
	assert_int_equal(line_table_step(other, units, 2), ltn);
	memcpy(at(table + ver.obj.bytes_data), other, ltn);
	assert_int_equal(symtab__add_record(st, &t, rec, len), 0);
	h = symtab__resolve(st, &t, co, hdr()->tag);
	assert_true(h >= 0);
	assert_int_equal(symtab__line(st, h, 0), 101);
	assert_int_equal(symtab__line(st, h, (uint32_t)whole - 1), 100 + (int)whole);
	assert_int_equal(symtab__line(st, h, (uint32_t)whole + 10), 0);
	symtab__free(st);

	/* the same first bytes, but another size: not the table copied either */
	st = symtab__new(0);
	memcpy(at(table + ver.obj.bytes_data), lt, ltn);
	put64(table + ver.obj.bytes_size, ltn - entry_size());
	assert_int_equal(symtab__add_record(st, &t, rec, len), 0);
	h = symtab__resolve(st, &t, co, hdr()->tag);
	assert_int_equal(symtab__line(st, h, (uint32_t)whole + 10), 0);
	symtab__free(st);
}

/* Parts the sampler could not read are flagged, not guessed: the record says which. */
static void test_unreadable_parts_are_flagged_in_the_record(void **state)
{
	uint8_t lt[32];
	size_t ltn = line_table(lt, 4);
	uint64_t name = str("f"), file = str("/a/long/enough/path/to/module.py");
	uint64_t table = bytes(lt, ltn), co = code_obj(name, file, table, 1);

	(void)state;
	hole(name, 1);
	capture(co);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_NAME);
	assert_int_equal(hdr()->name_len, 0);
	assert_int_equal(hdr()->file_len, ver.obj.str_ascii_data + 32);
	assert_int_equal(hdr()->lt_len, ltn);

	nholes = 0;
	hole(file + 64, 1); /* the header reads, the characters do not */
	capture(co);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_FILE);
	assert_int_equal(hdr()->file_len, 0);

	nholes = 0;
	hole(table + ver.obj.bytes_size, 8); /* its size */
	capture(co);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_LINETABLE);
	assert_int_equal(hdr()->lt_len, 0);
	assert_int_equal(hdr()->lt_size, 0);

	nholes = 0;
	hole(table + ver.obj.bytes_data, 1); /* its data */
	capture(co);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_LINETABLE);
	assert_int_equal(hdr()->lt_len, 0);
	assert_int_equal(hdr()->lt_size, ltn);

	nholes = 0;
	put64(co + ver.obj.co_qualname, 0);
	put64(co + ver.obj.co_filename, 0);
	put64(co + ver.obj.co_linetable, 0);
	/* (3.10/3.11 would not have shipped such a frame: its name is part of the tag) */
	assert_true(pw_code_capture(&ver.cfg, 1, co, 0, rec) > 0);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_NAME | PW_CODEF_NO_FILE | PW_CODEF_NO_LINETABLE);
	assert_int_equal(hdr()->head_len, ver.obj.co_read_size);
}

static void test_strings_that_are_not_compact_or_sizes_that_are_absurd_are_not_copied(void **state)
{
	uint64_t name = str("f"), file = str("a.py"), table = bytes(NULL, 0);
	uint64_t co = code_obj(name, file, table, 1);

	(void)state;
	put32(name + ver.obj.str_state, 1u << 2 | 1u << 6); /* not compact */
	put32(file + ver.obj.str_state, 3u << 2 | 1u << 5); /* kind 3 does not exist */
	put64(table + ver.obj.bytes_size, (uint64_t)-5);    /* a negative ob_size */
	capture(co);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_NAME | PW_CODEF_NO_FILE | PW_CODEF_NO_LINETABLE);
	assert_int_equal(hdr()->lt_size, 0);
}

static void test_unreadable_code_object_gives_no_record(void **state)
{
	uint64_t co = code_obj(str("f"), str("a.py"), bytes(NULL, 0), 1);
	struct pw_proc bad = ver.cfg;

	(void)state;
	assert_int_equal(pw_code_capture(&ver.cfg, 1, co + ARENA_SIZE, 0, rec), 0);
	hole(co + ver.obj.co_read_size - 1, 1);
	assert_int_equal(pw_code_capture(&ver.cfg, 1, co, 0, rec), 0);
	nholes = 0;
	/* a config whose pointers lie past the header it reads copies nothing */
	bad.obj.co_head_size = bad.obj.co_qualname;
	assert_int_equal(pw_code_capture(&bad, 1, co, 0, rec), 0);
	assert_true(pw_code_capture(&ver.cfg, 1, co, 0, rec) > 0);
}

/* What the record lacks, the symbolizer reads from the target while it lives; when it is
 * gone, the record is not enough and is refused (the sample's own lookup counts it). */
static void test_part_missing_from_the_record_is_read_from_the_target(void **state)
{
	uint8_t lt[32];
	size_t ltn = line_table(lt, 4);
	uint64_t name = str("g"), table = bytes(lt, ltn);
	uint64_t co = code_obj(name, str("b.py"), table, 5);
	struct symtab *st;
	int64_t h;

	(void)state;
	hole(name, 1);
	hole(table + ver.obj.bytes_data, 1);
	h = symbolize(co, getpid(), &st);
	assert_int_equal(hdr()->flags, PW_CODEF_NO_NAME | PW_CODEF_NO_LINETABLE);
	assert_true(h >= 0);
	assert_string_equal(name_of(st, h), "g");
	assert_int_equal(symtab__line(st, h, 3), 9);
	assert_int_equal(symtab__stats(st)->from_records, 1);
	symtab__free(st);

	h = symbolize(co, gone_pid(), &st);
	assert_true(h < 0);
	assert_int_equal(symtab__stats(st)->bad_records, 1);
	assert_int_equal(symtab__stats(st)->entries, 0);
	symtab__free(st);
}

/* The record of an object at an address that now holds another one: the tag the sampler
 * folded is not the copied header's, and nothing is named after it. */
static void test_record_whose_tag_does_not_match_its_header_is_rejected(void **state)
{
	uint64_t co = code_obj(str("f"), str("a.py"), bytes(NULL, 0), 1);
	struct symtab_target t = target_for(gone_pid());
	struct symtab *st = symtab__new(0);
	struct pw_code_hdr *h = (struct pw_code_hdr *)rec;
	uint32_t len = capture(co);

	(void)state;
	h->tag ^= 1;
	assert_int_equal(symtab__add_record(st, &t, rec, len), -ESTALE);
	assert_int_equal(symtab__stats(st)->bad_records, 1);
	assert_int_equal(symtab__stats(st)->entries, 0);
	/* and a copy whose window changed since (another object's header, same tag) */
	h->tag ^= 1;
	rec[sizeof(*h) + ver.cfg.off.code_tag] ^= 0x10;
	assert_int_equal(symtab__add_record(st, &t, rec, len), -ESTALE);
	assert_int_equal(symtab__stats(st)->bad_records, 2);
	symtab__free(st);
}

static void test_record_of_an_object_that_is_not_code_is_rejected(void **state)
{
	uint64_t co = code_obj(str("f"), str("a.py"), bytes(NULL, 0), 1);
	struct symtab_target t = target_for(gone_pid());
	struct symtab *st = symtab__new(0);
	uint32_t len;

	(void)state;
	put64(co + 8, STR_TYPE);
	len = capture(co);
	assert_int_equal(symtab__add_record(st, &t, rec, len), -EINVAL);
	assert_int_equal(symtab__stats(st)->bad_records, 1);
	/* a target whose PyCode_Type is unknown is not checked */
	t.code_type = 0;
	assert_int_equal(symtab__add_record(st, &t, rec, len), 0);
	symtab__free(st);
}

static void test_record_shorter_than_it_says_is_rejected(void **state)
{
	uint64_t co = code_obj(str("f"), str("a.py"), bytes(NULL, 0), 1);
	struct symtab_target t = target_for(gone_pid());
	struct symtab *st = symtab__new(0);
	uint32_t len = capture(co);

	(void)state;
	assert_int_equal(symtab__add_record(st, &t, rec, len - 1), -EINVAL);
	assert_int_equal(symtab__add_record(st, &t, rec, sizeof(struct pw_code_hdr) - 1), -EINVAL);
	assert_int_equal(symtab__stats(st)->bad_records, 2);
	assert_int_equal(symtab__add_record(st, &t, rec, len), 0);
	/* the same object shipped by a second CPU is one entry */
	assert_int_equal(symtab__add_record(st, &t, rec, len), 0);
	assert_int_equal(symtab__stats(st)->entries, 1);
	assert_int_equal(symtab__stats(st)->from_records, 1);
	symtab__free(st);
}

/* 3.10/3.11 fold the name's text into the tag: a record is checked against the name image
 * it carries, so a name changed after the sample is refused. */
static void test_name_text_is_part_of_the_tag_where_the_version_has_no_co_version(void **state)
{
	uint64_t name = str("original"), co = code_obj(name, str("a.py"), bytes(NULL, 0), 1);
	struct symtab_target t = target_for(gone_pid());
	struct symtab *st = symtab__new(0);
	uint32_t tag = sample_tag(co), len;

	(void)state;
	assert_true(ver.cfg.code_tag_name < PW_CODE_TAG_WORDS);
	memcpy(at(name + ver.obj.str_ascii_data), "replaced", 8);
	assert_int_not_equal(sample_tag(co), tag);
	len = pw_code_capture(&ver.cfg, 1, co, tag, rec);
	assert_int_equal(symtab__add_record(st, &t, rec, len), -ESTALE);
	len = pw_code_capture(&ver.cfg, 1, co, sample_tag(co), rec);
	assert_int_equal(symtab__add_record(st, &t, rec, len), 0);
	assert_string_equal(name_of(st, symtab__resolve(st, &t, co, sample_tag(co))), "replaced");
	symtab__free(st);
}

int main(void)
{
#define ON(name, minor)                                                   \
	{                                                                 \
#name " (3." #minor ")", name, setup_3##minor, NULL, NULL \
	}
#define EACH(name) ON(name, 10), ON(name, 11), ON(name, 12)
	const struct CMUnitTest tests[] = {
		EACH(test_record_of_ascii_names_copies_header_names_and_line_table),
		EACH(test_record_names_of_every_str_kind_decode_to_utf8),
		EACH(test_long_name_is_cut_in_the_record_and_completed_from_the_target),
		EACH(test_long_line_table_is_cut_in_the_record_and_completed_from_the_target),
		EACH(test_cut_line_table_is_not_completed_from_another_object),
		EACH(test_unreadable_parts_are_flagged_in_the_record),
		EACH(test_strings_that_are_not_compact_or_sizes_that_are_absurd_are_not_copied),
		EACH(test_unreadable_code_object_gives_no_record),
		EACH(test_part_missing_from_the_record_is_read_from_the_target),
		EACH(test_record_whose_tag_does_not_match_its_header_is_rejected),
		EACH(test_record_of_an_object_that_is_not_code_is_rejected),
		EACH(test_record_shorter_than_it_says_is_rejected),
		ON(test_name_text_is_part_of_the_tag_where_the_version_has_no_co_version, 10),
		ON(test_name_text_is_part_of_the_tag_where_the_version_has_no_co_version, 11),
	};
#undef EACH
#undef ON

	return cmocka_run_group_tests_name("code", tests, NULL, NULL);
}
