// SPDX-License-Identifier: MIT
/* Offset selection: _Py_DebugOffsets images built with the values measured on live 3.13.0,
 * 3.14.7 and 3.15.2 processes must give the walker the offsets those processes use;
 * free-threaded builds, unknown layouts and corrupt values are refused; the 3.10-3.12
 * tables match the measured layouts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "inspect/pyver.h"
#include "debug_offsets_314t.h"

static uint8_t dbg[1024];

static void put(uint16_t pos, uint64_t v)
{
	memcpy(dbg + pos, &v, 8);
}

static void build(uint64_t version, int free_threaded, const struct field *f, size_t n)
{
	memset(dbg, 0, sizeof(dbg));
	memcpy(dbg, "xdebugpy", 8);
	put(8, version);
	put(16, free_threaded);
	for (size_t i = 0; i < n; i++)
		put(f[i].pos, f[i].value);
}

static const struct field f315[] = {
	{ 40, 936 },  { 64, 7264 }, { 72, 7336 }, { 192, 8 },	{ 208, 72 }, { 216, 80 },
	{ 248, 184 }, { 256, 256 }, { 320, 8 },	  { 328, 0 },	{ 336, 56 }, { 352, 74 },
	{ 384, 112 }, { 392, 120 }, { 400, 128 }, { 408, 136 }, { 416, 68 }, { 448, 208 },
	{ 696, 16 },  { 704, 32 },  { 720, 32 },  { 728, 16 },	{ 736, 40 }, { 744, 56 },
	{ 472, 8 },   { 560, 16 }, /* pyobject.ob_type, tuple_object.ob_size */
};

static const struct field f314[] = {
	{ 40, 808 },  { 64, 7272 }, { 72, 7344 }, { 192, 8 },  { 208, 72 },  { 224, 160 },
	{ 232, 232 }, { 256, 8 },   { 264, 0 },	  { 272, 56 }, { 288, 74 },  { 320, 112 },
	{ 328, 120 }, { 336, 128 }, { 344, 136 }, { 352, 68 }, { 384, 208 }, { 600, 16 },
	{ 608, 32 },  { 624, 32 },  { 632, 16 },  { 640, 40 }, { 408, 8 },   { 464, 16 },
};

static const struct field f313[] = {
	{ 40, 632 },  { 64, 7264 }, { 72, 7344 }, { 168, 8 },  { 184, 72 },  { 200, 160 },
	{ 208, 232 }, { 232, 8 },   { 240, 0 },	  { 248, 56 }, { 264, 70 },  { 280, 112 },
	{ 288, 120 }, { 296, 128 }, { 304, 136 }, { 312, 68 }, { 344, 200 }, { 520, 16 },
	{ 528, 32 },  { 544, 32 },  { 552, 16 },  { 560, 40 },
};

static void test_315_debug_offsets_give_base_frame_rule(void **state)
{
	struct py_version v;
	char why[256] = "";

	(void)state;
	build(0x030f02f0, 0, f315, sizeof(f315) / sizeof(f315[0]));
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	assert_int_equal(v.minor, 15);
	assert_int_equal(v.micro, 2);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_BASE);
	assert_int_equal(v.cfg.off.runtime_interp_head, 936);
	assert_int_equal(v.cfg.off.interp_threads_head, 7336);
	assert_int_equal(v.cfg.off.tstate_frame, 72);
	assert_int_equal(v.cfg.off.tstate_base_frame, 80);
	assert_int_equal(v.cfg.off.tstate_thread_id, 184);
	assert_int_equal(v.cfg.off.tstate_datastack_chunk, 256);
	assert_int_equal(v.cfg.off.frame_owner, 74);
	assert_int_equal(v.cfg.off.frame_instr, 56);
	assert_int_equal(v.cfg.off.code_adaptive, 208);
	assert_int_equal(v.cfg.code_tag_bits, 2);
	assert_int_equal(v.cfg.shim_owner, 3);
	assert_int_equal(v.obj.co_qualname, 128);
	assert_int_equal(v.obj.co_firstlineno, 68);
	assert_int_equal(v.obj.str_compact_data, 56);
	assert_true(v.cfg.off.tstate_read_size <= PW_TSTATE_READ_MAX);
	assert_true(v.cfg.off.tstate_read_size >= 264);
	assert_true(v.cfg.off.frame_read_size >= 75 && v.cfg.off.frame_read_size <= 88);
}

static void test_314_and_313_use_the_entry_frame_rule(void **state)
{
	struct py_version v;
	char why[256] = "";

	(void)state;
	build(0x030e07f0, 0, f314, sizeof(f314) / sizeof(f314[0]));
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_SHIM);
	assert_int_equal(v.cfg.off.tstate_base_frame, PW_OFF_NONE);
	assert_int_equal(v.cfg.off.runtime_interp_head, 808);
	assert_int_equal(v.cfg.off.tstate_thread_id, 160);
	assert_int_equal(v.cfg.code_tag_bits, 2);

	build(0x030d00f0, 0, f313, sizeof(f313) / sizeof(f313[0]));
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_SHIM);
	assert_int_equal(v.cfg.off.runtime_interp_head, 632);
	assert_int_equal(v.cfg.off.frame_owner, 70);
	assert_int_equal(v.cfg.off.code_adaptive, 200);
	assert_int_equal(v.cfg.code_tag_bits, 0); /* f_executable is a plain pointer */
	assert_int_equal(v.obj.str_ascii_data, 40);
}

static void test_free_threaded_build_is_refused(void **state)
{
	struct py_version v;
	char why[256] = "";

	(void)state;
	/* 3.15t and 3.13t: no build of theirs was checked here */
	build(0x030f02f0, 1, f315, sizeof(f315) / sizeof(f315[0]));
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)),
			 -ENOTSUP);
	assert_non_null(strstr(why, "free-threaded"));
	assert_true(v.free_threaded);
	build(0x030d00f0, 1, f313, sizeof(f313) / sizeof(f313[0]));
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)),
			 -ENOTSUP);
	assert_non_null(strstr(why, "3.14 only"));
}

static void test_314t_layout_comes_from_its_own_table(void **state)
{
	struct py_version v;
	char why[256] = "";

	(void)state;
	build(0x030e07f0, 1, f314t, sizeof(f314t) / sizeof(f314t[0]));
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	assert_true(v.free_threaded);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_SHIM);
	assert_int_equal(v.cfg.off.frame_owner, 78); /* tlbc_index sits before it */
	assert_int_equal(v.cfg.off.frame_tlbc_index, 72);
	assert_int_equal(v.cfg.off.code_tlbc, 224);
	assert_int_equal(v.cfg.off.code_adaptive, 232);
	assert_int_equal(v.cfg.off.code_ob_size, 32); /* after the 32-byte header */
	assert_int_equal(v.obj.ob_type, 24);
	assert_int_equal(v.cfg.code_tag_bits, 1);      /* Py_TAG_BITS of the build */
	assert_int_equal(v.cfg.gil_kind, PW_GIL_NONE); /* no GIL to attribute */
	assert_int_equal(v.obj.co_filename, 128);
	assert_int_equal(v.obj.co_qualname, 144);
	assert_int_equal(v.obj.co_linetable, 152);
	assert_int_equal(v.obj.co_firstlineno, 84);
	assert_int_equal(v.obj.str_length, 32);
	assert_int_equal(v.obj.str_state, 48);
	assert_int_equal(v.obj.str_ascii_data, 56);
	assert_int_equal(v.obj.str_compact_data, 72);
	assert_int_equal(v.obj.str_kind_shift, 8); /* `interned` is a whole byte */
	assert_int_equal(v.cfg.obj.str_kind_shift, 8);
	assert_int_equal(v.obj.bytes_size, 32);
	assert_int_equal(v.obj.bytes_data, 48);
	assert_int_equal(v.cfg.off.code_tag, 104); /* 3.14's window, 16 bytes on */
	assert_true(v.cfg.off.frame_read_size >= 79 && v.cfg.off.frame_read_size <= 88);
	assert_int_equal(v.mod.interp_modules, 7712);
	assert_int_equal(v.mod.ht_cached_keys, 896); /* after the longer header */

	/* a free-threaded table without the thread-local bytecode fields is not 3.14t's */
	put(304, 0);
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), -EPROTO);
	/* nor one whose object header is the default build's */
	build(0x030e07f0, 1, f314t, sizeof(f314t) / sizeof(f314t[0]));
	put(408, 8);
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), -EPROTO);
	assert_non_null(strstr(why, "object header"));
}

static void test_unknown_layout_is_refused(void **state)
{
	struct py_version v;
	char why[256] = "";

	(void)state;
	build(0x031000a1, 0, f315, sizeof(f315) / sizeof(f315[0])); /* 3.16 */
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)),
			 -ENOTSUP);
	assert_non_null(strstr(why, "3.16"));
}

static void test_corrupt_offsets_are_refused(void **state)
{
	struct py_version v;
	char why[256] = "";

	(void)state;
	build(0x030f02f0, 0, f315, sizeof(f315) / sizeof(f315[0]));
	put(336, 1ull << 40); /* instr_ptr offset from hostile memory */
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), -EPROTO);
	build(0x030f02f0, 0, f315, sizeof(f315) / sizeof(f315[0]));
	put(352, 200); /* owner past the frame bytes the walker reads */
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), -EPROTO);
	build(0x030f02f0, 0, f315, sizeof(f315) / sizeof(f315[0]));
	put(320, 12); /* previous at a misaligned offset */
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), -EPROTO);
	memcpy(dbg, "xdebugpz", 8);
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), -EPROTO);
}

/* A table the walker and the symbolizer cannot use must be refused at attach time, not
 * accepted and then make every sample unreadable (found by tests/fuzz/fuzz_debug_offsets). */
static void test_offsets_the_readers_cannot_use_are_refused(void **state)
{
	static const struct {
		uint16_t pos;
		uint64_t value;
		const char *what;
	} bad[] = {
		{ 408, 512, "co_linetable past the code object bytes the symbolizer reads" },
		{ 720, 64, "str state past the str header the symbolizer reads" },
		{ 728, 60, "str length past the str header" },
		{ 336, 60, "instr_ptr 4-aligned: the walker's aligned load reads another word" },
	};
	struct py_version v;
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		build(0x030f02f0, 0, f315, sizeof(f315) / sizeof(f315[0]));
		put(bad[i].pos, bad[i].value);
		why[0] = 0;
		if (pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)) != -EPROTO)
			fail_msg("accepted: %s", bad[i].what);
		assert_non_null(strstr(why, "corrupt"));
	}
	/* a code layout with every field in the first word still reads the type pointer,
	 * which the symbolizer checks before anything else */
	build(0x030f02f0, 0, f315, sizeof(f315) / sizeof(f315[0]));
	for (uint16_t pos = 384; pos <= 416; pos += 8)
		put(pos, 0);
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	assert_true(v.obj.co_read_size >= 16);
}

static void test_tables_310_to_312(void **state)
{
	struct py_version v;

	(void)state;
	assert_int_equal(pyver_table(10, &v), 0);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_FRAMEOBJ);
	assert_int_equal(v.cfg.thread_match, PW_MATCH_PTHREAD);
	assert_int_equal(v.cfg.off.tstate_thread_id, 176);
	assert_int_equal(v.obj.lt_format, LINETABLE_PEP626);
	assert_int_equal(pyver_table(11, &v), 0);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_ISENTRY);
	assert_int_equal(v.cfg.off.cframe_current_frame, 8);
	assert_int_equal(v.cfg.off.tstate_datastack_chunk, 296);
	assert_true(v.cfg.off.tstate_read_size >= 304);
	assert_int_equal(pyver_table(12, &v), 0);
	assert_int_equal(v.cfg.chain_kind, PW_CHAIN_SHIM);
	assert_int_equal(v.cfg.off.cframe_current_frame, 0);
	assert_int_equal(v.cfg.off.tstate_thread_id, 144);
	assert_int_equal(pyver_table(9, &v), -ENOTSUP);
	assert_int_equal(pyver_table(13, &v), -ENOTSUP); /* 3.13+: debug offsets only */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_315_debug_offsets_give_base_frame_rule),
		cmocka_unit_test(test_314_and_313_use_the_entry_frame_rule),
		cmocka_unit_test(test_free_threaded_build_is_refused),
		cmocka_unit_test(test_314t_layout_comes_from_its_own_table),
		cmocka_unit_test(test_unknown_layout_is_refused),
		cmocka_unit_test(test_corrupt_offsets_are_refused),
		cmocka_unit_test(test_offsets_the_readers_cannot_use_are_refused),
		cmocka_unit_test(test_tables_310_to_312),
	};

	return cmocka_run_group_tests_name("pyver", tests, NULL, NULL);
}
