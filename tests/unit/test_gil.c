// SPDX-License-Identifier: MIT
/* Who holds the GIL (bpf/gil.h) over synthetic memory, with the configs pyver.c gives each
 * version: 3.10/3.11 the runtime's tstate_current, 3.12-3.14 the interpreter's GIL struct
 * (locked and last_holder), 3.15 the thread state's flag. A read that fails is "cannot
 * tell", never "not held". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define MEM_BASE 0x20000000ull
#define MEM_SIZE (1 << 16)
static uint8_t mem[MEM_SIZE];

static int mem_read(void *dst, uint32_t size, uint64_t addr)
{
	if (addr < MEM_BASE || addr + size > MEM_BASE + MEM_SIZE)
		return -14; /* -EFAULT */
	memcpy(dst, mem + (addr - MEM_BASE), size);
	return 0;
}

#define PW_READ_USER(dst, size, addr) mem_read((dst), (size), (addr))
#include "gil.h"
#include "inspect/pyver.h"

#define RUNTIME (MEM_BASE + 0x100)
#define INTERP (MEM_BASE + 0x2000)
#define GIL (MEM_BASE + 0x8000)
#define TSTATE_A (MEM_BASE + 0x9000)
#define TSTATE_B (MEM_BASE + 0xa000)

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - MEM_BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - MEM_BASE), &v, 4);
}

static uint8_t ts[PW_TSTATE_READ_MAX] __attribute__((aligned(8)));

/* The image of thread state `addr`, as the sampler reads it. */
static const uint8_t *image(const struct pw_proc *cfg, uint64_t addr)
{
	memset(ts, 0, sizeof(ts));
	memcpy(ts, mem + (addr - MEM_BASE), cfg->off.tstate_read_size);
	return ts;
}

static struct pw_proc table(unsigned int minor)
{
	struct py_version v;

	assert_int_equal(pyver_table(minor, &v), 0);
	v.cfg.runtime_addr = RUNTIME;
	return v.cfg;
}

static void test_310_311_holder_is_tstate_current(void **state)
{
	(void)state;
	for (unsigned int minor = 10; minor <= 11; minor++) {
		struct pw_proc cfg = table(minor);

		memset(mem, 0, sizeof(mem));
		assert_int_equal(cfg.gil_kind, PW_GIL_TSTATE_CURRENT);
		put64(RUNTIME + cfg.off.gil_ptr, TSTATE_A);
		assert_int_equal(pw_gil_flags(&cfg, image(&cfg, TSTATE_A), TSTATE_A),
				 PW_SF_GIL_KNOWN | PW_SF_GIL_HELD);
		assert_int_equal(pw_gil_flags(&cfg, image(&cfg, TSTATE_B), TSTATE_B),
				 PW_SF_GIL_KNOWN);
		put64(RUNTIME + cfg.off.gil_ptr, 0); /* released, nobody took it yet */
		assert_int_equal(pw_gil_flags(&cfg, image(&cfg, TSTATE_A), TSTATE_A),
				 PW_SF_GIL_KNOWN);
		cfg.runtime_addr = MEM_BASE + MEM_SIZE; /* unreadable: cannot tell */
		assert_int_equal(pw_gil_flags(&cfg, image(&cfg, TSTATE_A), TSTATE_A), 0);
	}
}

/* 3.12's table, and 3.13/3.14's debug offsets as the live interpreters give them. */
static void check_gil_struct(const struct pw_proc *cfg)
{
	memset(mem, 0, sizeof(mem));
	assert_int_equal(cfg->gil_kind, PW_GIL_STRUCT);
	put64(TSTATE_A + cfg->off.tstate_interp, INTERP);
	put64(TSTATE_B + cfg->off.tstate_interp, INTERP);
	put64(INTERP + cfg->off.gil_ptr, GIL);
	put64(GIL + cfg->off.gil_holder, TSTATE_A);
	put32(GIL + cfg->off.gil_locked, 1);
	assert_int_equal(pw_gil_flags(cfg, image(cfg, TSTATE_A), TSTATE_A),
			 PW_SF_GIL_KNOWN | PW_SF_GIL_HELD);
	assert_int_equal(pw_gil_flags(cfg, image(cfg, TSTATE_B), TSTATE_B), PW_SF_GIL_KNOWN);
	/* released: last_holder still names A */
	put32(GIL + cfg->off.gil_locked, 0);
	assert_int_equal(pw_gil_flags(cfg, image(cfg, TSTATE_A), TSTATE_A), PW_SF_GIL_KNOWN);
	/* no interpreter or no GIL yet: cannot tell */
	put64(INTERP + cfg->off.gil_ptr, 0);
	assert_int_equal(pw_gil_flags(cfg, image(cfg, TSTATE_A), TSTATE_A), 0);
	put64(TSTATE_A + cfg->off.tstate_interp, 0);
	assert_int_equal(pw_gil_flags(cfg, image(cfg, TSTATE_A), TSTATE_A), 0);
}

static uint8_t dbg[1024];

static void dbg_put(uint16_t pos, uint64_t v)
{
	memcpy(dbg + pos, &v, 8);
}

/* A _Py_DebugOffsets image of `version` with the walker's fields (measured values) and
 * the GIL's (values read from the live 3.13.18, 3.14.10 and 3.15.2 binaries). */
static void build(uint64_t version, bool with_gil)
{
	unsigned int minor = (version >> 16) & 0xff;

	memset(dbg, 0, sizeof(dbg));
	memcpy(dbg, "xdebugpy", 8);
	dbg_put(8, version);
	if (minor == 13) {
		static const uint16_t pos[] = { 40,  64,  72,  168, 184, 200, 208, 232,
						240, 248, 264, 280, 288, 296, 304, 312,
						344, 520, 528, 544, 552, 560 };
		static const uint64_t val[] = {
			632, 7264, 7344, 8,   72, 160, 232, 8,	0,  56, 70,
			112, 120,  128,	 136, 68, 200, 16,  32, 32, 16, 40
		};

		for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
			dbg_put(pos[i], val[i]);
		if (with_gil) {
			dbg_put(176, 16);   /* thread_state.interp */
			dbg_put(112, 16);   /* interpreter_state.ceval_gil */
			dbg_put(120, 7752); /* gil_runtime_state */
			dbg_put(136, 7768); /* gil_runtime_state_locked */
			dbg_put(144, 7760); /* gil_runtime_state_holder */
		}
	} else {
		static const uint16_t pos14[] = { 40,  64,  72,	 192, 208, 224, 232, 256,
						  264, 272, 288, 320, 328, 336, 344, 352,
						  384, 600, 608, 624, 632, 640 };
		static const uint64_t val14[] = { 808, 7272, 7344, 8,	72,  160, 232, 8,
						  0,   56,   74,   112, 120, 128, 136, 68,
						  208, 16,   32,   32,	16,  40 };
		static const uint16_t pos15[] = { 40,  64,  72,	 192, 208, 216, 248, 256,
						  320, 328, 336, 352, 384, 392, 400, 408,
						  416, 448, 696, 704, 720, 728, 736, 744 };
		static const uint64_t val15[] = { 936, 7264, 7336, 8,  72,  80,	 184, 256,
						  8,   0,    56,   74, 112, 120, 128, 136,
						  68,  208,  16,   32, 32,  16,	 40,  56 };
		const uint16_t *pos = minor == 14 ? pos14 : pos15;
		const uint64_t *val = minor == 14 ? val14 : val15;
		size_t n = minor == 14 ? sizeof(pos14) / sizeof(pos14[0])
				       : sizeof(pos15) / sizeof(pos15[0]);

		for (size_t i = 0; i < n; i++)
			dbg_put(pos[i], val[i]);
		/* pyobject.ob_type, tuple_object.ob_size (3.14.7's and 3.15.2's tables) */
		dbg_put(minor == 14 ? 408 : 472, 8);
		dbg_put(minor == 14 ? 464 : 560, 16);
		if (with_gil) {
			dbg_put(200, 16);			 /* thread_state.interp */
			dbg_put(120, 16);			 /* ceval_gil */
			dbg_put(128, minor == 14 ? 7784 : 7736); /* gil_runtime_state */
			dbg_put(144, minor == 14 ? 7800 : 7752); /* _locked */
			dbg_put(152, minor == 14 ? 7792 : 7744); /* _holder */
			if (minor == 15)
				dbg_put(272, 36); /* thread_state.holds_gil */
		}
	}
}

static struct pw_proc from_debug(uint64_t version, bool with_gil)
{
	struct py_version v;
	char why[256] = "";

	build(version, with_gil);
	assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)), 0);
	v.cfg.runtime_addr = RUNTIME;
	return v.cfg;
}

static void test_312_to_314_holder_is_the_locked_gil_last_holder(void **state)
{
	struct pw_proc cfg = table(12);

	(void)state;
	assert_int_equal(cfg.off.gil_ptr, 384);
	check_gil_struct(&cfg);
	cfg = from_debug(0x030d12f0, true);
	/* the struct's fields are taken relative to it, not to the interpreter */
	assert_int_equal(cfg.off.gil_ptr, 16);
	assert_int_equal(cfg.off.gil_holder, 8);
	assert_int_equal(cfg.off.gil_locked, 16);
	assert_int_equal(cfg.off.tstate_interp, 16);
	check_gil_struct(&cfg);
	cfg = from_debug(0x030e0af0, true);
	assert_int_equal(cfg.off.gil_holder, 8);
	assert_int_equal(cfg.off.gil_locked, 16);
	check_gil_struct(&cfg);
}

static void test_315_holder_has_the_thread_state_flag(void **state)
{
	struct pw_proc cfg = from_debug(0x030f02f0, true);

	(void)state;
	memset(mem, 0, sizeof(mem));
	assert_int_equal(cfg.gil_kind, PW_GIL_TSTATE_FLAG);
	assert_int_equal(cfg.off.tstate_holds_gil, 36);
	assert_true(cfg.off.tstate_read_size >= 40);
	put32(TSTATE_A + 36, 1);
	assert_int_equal(pw_gil_flags(&cfg, image(&cfg, TSTATE_A), TSTATE_A),
			 PW_SF_GIL_KNOWN | PW_SF_GIL_HELD);
	assert_int_equal(pw_gil_flags(&cfg, image(&cfg, TSTATE_B), TSTATE_B), PW_SF_GIL_KNOWN);
}

/* Without the GIL's fields (or with values that do not fit) the stacks are still sampled,
 * and the version cannot tell: --mode gil refuses it. */
static void test_missing_or_odd_gil_offsets_cannot_tell(void **state)
{
	struct pw_proc cfg;

	(void)state;
	cfg = from_debug(0x030d12f0, false);
	assert_int_equal(cfg.gil_kind, PW_GIL_NONE);
	assert_int_equal(pw_gil_flags(&cfg, ts, TSTATE_A), 0);
	build(0x030e0af0, true);
	dbg_put(144, 7700); /* locked before the struct it is in */
	{
		struct py_version v;
		char why[256] = "";

		assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)),
				 0);
		assert_int_equal(v.cfg.gil_kind, PW_GIL_NONE);
		build(0x030e0af0, true);
		dbg_put(200, 4000); /* thread_state.interp past what the sampler reads */
		assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)),
				 0);
		assert_int_equal(v.cfg.gil_kind, PW_GIL_NONE);
		build(0x030f02f0, true);
		dbg_put(272, 38); /* a misaligned flag: the struct is used instead */
		assert_int_equal(pyver_from_debug_offsets(dbg, sizeof(dbg), &v, why, sizeof(why)),
				 0);
		assert_int_equal(v.cfg.gil_kind, PW_GIL_STRUCT);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_310_311_holder_is_tstate_current),
		cmocka_unit_test(test_312_to_314_holder_is_the_locked_gil_last_holder),
		cmocka_unit_test(test_315_holder_has_the_thread_state_flag),
		cmocka_unit_test(test_missing_or_odd_gil_offsets_cannot_tell),
	};

	return cmocka_run_group_tests_name("gil", tests, NULL, NULL);
}
