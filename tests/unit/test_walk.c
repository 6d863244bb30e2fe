// SPDX-License-Identifier: MIT
/* The BPF frame walker (bpf/walk.h) run over synthetic memory images: complete chains per
 * version family, torn chains, cycles, bad frames, read faults and the depth bound. Every
 * outcome the walker can produce has an image here. */
#include "synth_mem.h"
#include "walk.h"
#include "inspect/pyver.h"

static int reset(void **state)
{
	(void)state;
	mem_reset();
	return 0;
}

/* ---- building chains ------------------------------------------------------------------- */

struct chain {
	struct pw_proc cfg;
	uint64_t tstate;
	uint64_t frames[64]; /* innermost first */
	int n;
};

/* A frame with code object `code` at instruction `instr` (code units) and owner `owner`. */
static uint64_t make_frame(const struct pw_proc *cfg, uint64_t code, uint32_t instr, uint8_t owner)
{
	uint64_t f = mem_alloc(PW_FRAME_READ_MAX);

	put64(f + cfg->off.frame_code, code);
	if (cfg->chain_kind == PW_CHAIN_FRAMEOBJ)
		put32(f + cfg->off.frame_instr, instr);
	else if (code)
		put64(f + cfg->off.frame_instr,
		      (code & ~3ull) + cfg->off.code_adaptive + 2ull * instr);
	if (cfg->off.frame_owner != PW_OFF_NONE)
		put8(f + cfg->off.frame_owner, owner);
	return f;
}

static void link_frames(const struct pw_proc *cfg, uint64_t callee, uint64_t caller)
{
	put64(callee + cfg->off.frame_previous, caller);
}

static void cfg_for(unsigned int minor, struct pw_proc *cfg)
{
	struct py_version v;

	if (minor <= 12) {
		assert_int_equal(pyver_table(minor, &v), 0);
		*cfg = v.cfg;
	} else {
		/* 3.15 shape from the debug offsets measured on a live 3.15 process */
		assert_int_equal(pyver_table(12, &v), 0);
		*cfg = v.cfg;
		cfg->chain_kind = minor >= 15 ? PW_CHAIN_BASE : PW_CHAIN_SHIM;
		cfg->code_tag_bits = minor >= 14 ? 2 : 0;
		cfg->off.tstate_frame = 72;
		cfg->off.cframe_current_frame = PW_OFF_NONE;
		cfg->off.tstate_base_frame = minor >= 15 ? 80 : PW_OFF_NONE;
		cfg->off.tstate_thread_id = minor >= 15 ? 184 : 160;
		cfg->off.frame_owner = minor >= 14 ? 74 : 70;
		cfg->off.code_adaptive = 208;
		cfg->off.frame_read_size = 80;
		cfg->off.tstate_read_size = 192;
	}
	cfg->runtime_addr = 0;
	/* the chain tests below place frames anywhere and use bare code objects; the
	 * data-stack check and the code tag have tests of their own */
	cfg->off.tstate_datastack_chunk = PW_OFF_NONE;
	cfg->off.code_tag = PW_OFF_NONE;
	cfg->code_tag_name = 0xff;
}

/* The walk's window and tag memory; left as the last walk left it, as in BPF. */
static struct pw_walkmem walk_mem;

/* Run the walk like the BPF program does: bounded loop, CONTINUE past the bound = DEPTH. */
static int run_walk(const struct pw_proc *cfg, uint64_t tstate, uint32_t max_depth,
		    struct pw_frame *out, uint32_t *nframes)
{
	uint8_t ts[PW_TSTATE_READ_MAX] = { 0 };
	struct pw_walk w;
	uint64_t current;

	assert_int_equal(mem_read(ts, cfg->off.tstate_read_size, tstate), 0);
	current = pw_load_u64(ts, cfg->off.tstate_frame, PW_TSTATE_READ_MAX);
	pw_walk_start(&w, &walk_mem, cfg, ts, current, max_depth);
	for (uint32_t i = 0; i < pw_walk_bound(max_depth); i++) {
		int done = pw_walk_step(&w, cfg, &walk_mem);

		if (w.emit && w.nframes - 1 < PW_MAX_FRAMES_CAP)
			out[w.nframes - 1] = w.cur;
		if (done)
			break;
	}
	*nframes = w.nframes;
	return w.outcome == PW_OUT__CONTINUE ? PW_OUT_DEPTH : w.outcome;
}

static struct pw_frame out[PW_MAX_FRAMES_CAP];

/* 3.15: leaf <- mid <- [entry] <- outer <- [entry] <- base frame (owned by the tstate) */
static uint64_t build_315(struct pw_proc *cfg, uint64_t codes[3], uint64_t *frames)
{
	uint64_t tstate = mem_alloc(1024), base = tstate + 888;

	cfg_for(15, cfg);
	put64(tstate + 80, base);
	put8(base + cfg->off.frame_owner, 3);
	for (int i = 0; i < 3; i++)
		codes[i] = mem_alloc(256);
	frames[0] = make_frame(cfg, codes[0] | 1, 10, 0); /* tagged _PyStackRef */
	frames[1] = make_frame(cfg, codes[1], 20, 0);
	frames[2] = make_frame(cfg, 0x1000 | 1, 0, 3); /* entry frame: None | tag */
	frames[3] = make_frame(cfg, codes[2], 30, 0);
	frames[4] = make_frame(cfg, 0x1000 | 1, 0, 3);
	for (int i = 0; i < 4; i++)
		link_frames(cfg, frames[i], frames[i + 1]);
	link_frames(cfg, frames[4], base);
	put64(tstate + 72, frames[0]);
	return tstate;
}

/* 3.14t, with the offsets its own _Py_DebugOffsets gives (test_pyver.c reads them from the
 * captured table): leaf (code A, in thread copy 2) <- mid (code B, in the main copy) <-
 * entry frame. A's co_tlbc holds 3 copies; the thread's index is 2. */
struct ft_chain {
	struct pw_proc cfg;
	uint64_t tstate, code_a, code_b, copies[3], frames[3];
};

#define FT_NUNITS 50

static uint64_t ft_code(const struct pw_proc *cfg, uint64_t copies[3])
{
	uint64_t code = mem_alloc(512), arr = mem_alloc(32);

	put64(code + cfg->off.code_ob_size, FT_NUNITS);
	put64(code + cfg->off.code_tlbc, arr);
	put64(arr, 3);
	copies[0] = code + cfg->off.code_adaptive;
	for (int i = 1; i < 3; i++)
		copies[i] = mem_alloc(2 * FT_NUNITS);
	for (int i = 0; i < 3; i++)
		put64(arr + 8 + 8 * i, copies[i]);
	return code;
}

static void build_314t(struct ft_chain *c)
{
	struct pw_proc *cfg = &c->cfg;
	uint64_t b_copies[3];

	cfg_for(14, cfg);
	cfg->code_tag_bits = 1; /* Py_TAG_BITS */
	cfg->off.frame_owner = 78;
	cfg->off.frame_tlbc_index = 72;
	cfg->off.code_tlbc = 224;
	cfg->off.code_ob_size = 32;
	cfg->off.code_adaptive = 232;
	cfg->off.frame_read_size = 80;
	c->tstate = mem_alloc(1024);
	c->code_a = ft_code(cfg, c->copies);
	c->code_b = ft_code(cfg, b_copies);
	c->frames[0] = make_frame(cfg, c->code_a | 1, 0, 0);
	put64(c->frames[0] + cfg->off.frame_instr, c->copies[2] + 2 * 7);
	c->frames[1] = make_frame(cfg, c->code_b | 1, 3, 0); /* main copy: code + adaptive */
	c->frames[2] = make_frame(cfg, 0x1000 | 1, 0, 3);
	for (int i = 0; i < 2; i++) {
		put32(c->frames[i] + cfg->off.frame_tlbc_index, 2);
		link_frames(cfg, c->frames[i], c->frames[i + 1]);
	}
	put64(c->tstate + 72, c->frames[0]);
}

static void test_314t_offset_is_taken_in_the_copy_the_pointer_is_in(void **state)
{
	struct ft_chain c;
	uint32_t n;

	(void)state;
	build_314t(&c);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].code, c.code_a); /* the one tag bit cleared */
	assert_int_equal(out[0].instr, 7);	 /* in the thread's copy */
	assert_int_equal(out[1].code, c.code_b);
	assert_int_equal(out[1].instr, 3); /* in the main copy */
	/* the last code unit of the thread's copy */
	put64(c.frames[0] + c.cfg.off.frame_instr, c.copies[2] + 2 * (FT_NUNITS - 1));
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(out[0].instr, FT_NUNITS - 1);
}

static void test_314t_pointer_in_no_copy_is_rejected(void **state)
{
	struct ft_chain c;
	uint32_t n;

	(void)state;
	/* in another thread's copy (index 1) while the frame runs copy 2 */
	build_314t(&c);
	put64(c.frames[0] + c.cfg.off.frame_instr, c.copies[1] + 2 * 7);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
	/* one past the end of the thread's copy, and just before it */
	put64(c.frames[0] + c.cfg.off.frame_instr, c.copies[2] + 2 * FT_NUNITS);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
	put64(c.frames[0] + c.cfg.off.frame_instr, c.copies[2] - 2);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
	/* an index past co_tlbc's size, or negative */
	build_314t(&c);
	put32(c.frames[0] + c.cfg.off.frame_tlbc_index, 3);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
	put32(c.frames[0] + c.cfg.off.frame_tlbc_index, (uint32_t)-1);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
	/* no co_tlbc array at all */
	build_314t(&c);
	put64(c.code_a + c.cfg.off.code_tlbc, 0);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
	/* a code object claiming no bytecode is no code object */
	build_314t(&c);
	put64(c.code_a + c.cfg.off.code_ob_size, 0);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_FRAME);
}

/* 3.14t recursion: 6 frames of code A in the thread's copy 2 above one of B in the main
 * copy. A's size and its copy are read once per walk, not once per frame, and every frame
 * still gets its own offset in the copy its pointer is in. */
static void test_314t_recursion_reads_a_code_objects_copy_once(void **state)
{
	struct ft_chain c;
	uint64_t frames[8];
	uint32_t n;
	int one, six;

	(void)state;
	build_314t(&c);
	reads = 0;
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_SHIPPED);
	one = reads;
	frames[6] = c.frames[1]; /* B, then the entry frame */
	for (int i = 5; i >= 0; i--) {
		frames[i] = make_frame(&c.cfg, c.code_a | 1, 0, 0);
		put64(frames[i] + c.cfg.off.frame_instr, c.copies[2] + 2 * (uint64_t)(10 + i));
		put32(frames[i] + c.cfg.off.frame_tlbc_index, 2);
		link_frames(&c.cfg, frames[i], frames[i + 1]);
	}
	put64(c.tstate + 72, frames[0]);
	reads = 0;
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_SHIPPED);
	six = reads;
	assert_int_equal(n, 7);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(out[i].code, c.code_a);
		assert_int_equal(out[i].instr, 10 + i);
	}
	assert_int_equal(out[6].instr, 3);
	/* five more frames of A: their frame reads only (no window here), nothing of A again */
	assert_int_equal(six - one, 5);
	/* a frame of A on another thread's copy index is read for that index */
	put32(frames[3] + c.cfg.off.frame_tlbc_index, 1);
	put64(frames[3] + c.cfg.off.frame_instr, c.copies[1] + 2 * 13);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(out[3].instr, 13);
	/* and one whose pointer is in no copy of A is still rejected, memo or not */
	put64(frames[4] + c.cfg.off.frame_instr, c.copies[1] + 2 * 14);
	assert_int_equal(run_walk(&c.cfg, c.tstate, 100, out, &n), PW_OUT_BAD_TLBC);
}

static void test_315_complete_chain_is_shipped_without_entry_frames(void **state)
{
	struct pw_proc cfg;
	uint64_t codes[3], frames[5], tstate;
	uint32_t n;

	(void)state;
	tstate = build_315(&cfg, codes, frames);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].code, codes[0]); /* tag bits masked */
	assert_int_equal(out[0].instr, 10);
	assert_int_equal(out[1].code, codes[1]);
	assert_int_equal(out[1].instr, 20);
	assert_int_equal(out[2].code, codes[2]);
	assert_int_equal(out[2].instr, 30);
}

static void test_315_current_is_base_frame_is_empty(void **state)
{
	struct pw_proc cfg;
	uint64_t codes[3], frames[5], tstate;
	uint32_t n;

	(void)state;
	tstate = build_315(&cfg, codes, frames);
	put64(tstate + 72, tstate + 888);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_EMPTY);
	assert_int_equal(n, 0);
}

static void test_315_chain_ending_in_null_before_base_is_torn(void **state)
{
	struct pw_proc cfg;
	uint64_t codes[3], frames[5], tstate, copy;
	uint32_t n;

	(void)state;
	tstate = build_315(&cfg, codes, frames);
	/* a copy of the top frame whose previous is NULL, as a half-done push looks */
	copy = make_frame(&cfg, codes[0], 10, 0);
	put64(tstate + 72, copy);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
	/* and at the entry frame: an entry frame with NULL previous is not the base */
	tstate = build_315(&cfg, codes, frames);
	link_frames(&cfg, frames[4], 0);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
}

static void test_315_cycle_is_rejected_as_cycle(void **state)
{
	struct pw_proc cfg;
	uint64_t codes[3], frames[5], tstate;
	uint32_t n;

	(void)state;
	tstate = build_315(&cfg, codes, frames);
	link_frames(&cfg, frames[3], frames[0]);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_CYCLE);
	/* a self-loop too */
	tstate = build_315(&cfg, codes, frames);
	link_frames(&cfg, frames[0], frames[0]);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_CYCLE);
}

static void test_315_bad_owner_and_null_code_are_bad_frames(void **state)
{
	struct pw_proc cfg;
	uint64_t codes[3], frames[5], tstate;
	uint32_t n;

	(void)state;
	tstate = build_315(&cfg, codes, frames);
	put8(frames[1] + cfg.off.frame_owner, 9);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_BAD_FRAME);
	tstate = build_315(&cfg, codes, frames);
	put64(frames[1] + cfg.off.frame_code, 1); /* PyStackRef_NULL */
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_BAD_FRAME);
}

static void test_315_unreadable_frame_is_read_fault(void **state)
{
	struct pw_proc cfg;
	uint64_t codes[3], frames[5], tstate;
	uint32_t n;

	(void)state;
	tstate = build_315(&cfg, codes, frames);
	link_frames(&cfg, frames[1], 0xdead0000);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_READ_FAULT);
}

/* A 3.15 chain of `depth` Python frames under one entry frame. */
static uint64_t build_deep_315(struct pw_proc *cfg, int depth, uint64_t code)
{
	uint64_t tstate = mem_alloc(1024), base = tstate + 888, prev = 0, first = 0;

	cfg_for(15, cfg);
	put64(tstate + 80, base);
	for (int i = 0; i < depth; i++) {
		uint64_t f = make_frame(cfg, code, (uint32_t)i, 0);

		if (prev)
			link_frames(cfg, prev, f);
		else
			first = f;
		prev = f;
	}
	uint64_t entry = make_frame(cfg, 0x1001, 0, 3);

	link_frames(cfg, prev, entry);
	link_frames(cfg, entry, base);
	put64(tstate + 72, first);
	return tstate;
}

static void test_deep_stack_within_bound_is_whole_and_beyond_is_depth(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), tstate;
	uint32_t n;

	(void)state;
	tstate = build_deep_315(&cfg, 1000, code);
	assert_int_equal(run_walk(&cfg, tstate, 1024, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 1000);
	assert_int_equal(out[999].instr, 999);
	assert_int_equal(run_walk(&cfg, tstate, 1000, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(run_walk(&cfg, tstate, 999, out, &n), PW_OUT_DEPTH);
	tstate = build_deep_315(&cfg, 4096, code);
	assert_int_equal(run_walk(&cfg, tstate, 4096, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 4096);
}

/* 3.12 (shim owner) and 3.13/3.14 share the rule: the bottom frame must be an entry frame */
static void test_shim_versions_need_entry_frame_at_bottom(void **state)
{
	static const unsigned int minors[] = { 12, 13, 14 };

	(void)state;
	for (size_t v = 0; v < sizeof(minors) / sizeof(minors[0]); v++) {
		struct pw_proc cfg;
		uint64_t code = mem_alloc(256), tstate = mem_alloc(512), cframe = tstate + 200;
		uint64_t leaf, entry;
		uint32_t n;

		cfg_for(minors[v], &cfg);
		leaf = make_frame(&cfg, code, 5, 0);
		entry = make_frame(&cfg, minors[v] == 12 ? code : 0x1000, 0, 3);
		link_frames(&cfg, leaf, entry);
		if (cfg.off.cframe_current_frame != PW_OFF_NONE) {
			/* 3.12: tstate->cframe->current_frame; the test reads it directly */
			put64(tstate + cfg.off.tstate_frame, cframe);
			put64(cframe + cfg.off.cframe_current_frame, leaf);
			cfg.off.tstate_frame =
				(uint16_t)(cframe - tstate); /* flatten for run_walk */
			cfg.off.cframe_current_frame = PW_OFF_NONE;
			cfg.off.tstate_read_size = PW_TSTATE_READ_MAX;
		} else {
			put64(tstate + cfg.off.tstate_frame, leaf);
		}
		assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
		assert_int_equal(n, 1);
		assert_int_equal(out[0].instr, 5);
		/* the chain stops at a normal frame: a push/pop caught half done */
		link_frames(&cfg, leaf, 0);
		assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
	}
}

static void test_311_needs_is_entry_at_bottom(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), tstate = mem_alloc(512), leaf, bottom;
	uint32_t n;

	(void)state;
	cfg_for(11, &cfg);
	leaf = make_frame(&cfg, code, 3, 0);
	bottom = make_frame(&cfg, code, 7, 0);
	link_frames(&cfg, leaf, bottom);
	cfg.off.tstate_frame = 0; /* flatten the cframe indirection for run_walk */
	put64(tstate, leaf);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
	put8(bottom + cfg.off.frame_is_entry, 1);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 2); /* 3.11 has no shim frames: the entry frame is user code */
	assert_int_equal(out[1].instr, 7);
}

static void test_311_instruction_before_start_is_none(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), tstate = mem_alloc(512), leaf;
	uint32_t n;

	(void)state;
	cfg_for(11, &cfg);
	leaf = make_frame(&cfg, code, 0, 0);
	/* prev_instr = _PyCode_CODE(code) - 1 before the first instruction runs */
	put64(leaf + cfg.off.frame_instr, code + cfg.off.code_adaptive - 2);
	put8(leaf + cfg.off.frame_is_entry, 1);
	cfg.off.tstate_frame = 0;
	put64(tstate, leaf);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(out[0].instr, PW_INSTR_NONE);
}

static void test_310_frame_objects_end_at_null_f_back(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), tstate = mem_alloc(512), leaf, root;
	uint32_t n;

	(void)state;
	cfg_for(10, &cfg);
	leaf = make_frame(&cfg, code, 12, 0);
	root = make_frame(&cfg, code, 4, 0);
	link_frames(&cfg, leaf, root);
	put64(tstate + cfg.off.tstate_frame, leaf);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].instr, 12);
	assert_int_equal(out[1].instr, 4);
	put64(tstate + cfg.off.tstate_frame, 0);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_EMPTY);
}

/* ---- data-stack placement (3.11+) ---------------------------------------------------- */

/* 3.15 chain of n THREAD frames placed in two stack chunks (older chunk holds the bottom
 * half), datastack_chunk pointing at the newer one and datastack_top past its top frame.
 * Frames innermost first in f[]. */
static uint64_t build_chunked_315(struct pw_proc *cfg, uint64_t code, uint64_t f[8])
{
	uint64_t tstate = mem_alloc(1024), base = tstate + 888;
	uint64_t old_chunk = mem_alloc(4096), new_chunk = mem_alloc(4096), entry;

	cfg_for(15, cfg);
	cfg->off.tstate_datastack_chunk = 256;
	cfg->off.tstate_read_size = 272; /* datastack_top at 264 */
	put64(tstate + 80, base);
	put64(tstate + 256, new_chunk);
	/* the live part of the newest chunk ends past its innermost frame's fields */
	put64(tstate + 264, new_chunk + PW_CHUNK_DATA_OFFSET + 3 * 200 + 160);
	put64(old_chunk, 0);
	put64(old_chunk + 8, 4096);
	put64(new_chunk, old_chunk);
	put64(new_chunk + 8, 4096);
	/* inner frames sit higher in a chunk: f[0..3] in the new chunk, f[4..7] in the old */
	for (int i = 0; i < 8; i++) {
		uint64_t chunk = i < 4 ? new_chunk : old_chunk;

		f[i] = chunk + PW_CHUNK_DATA_OFFSET + (uint64_t)(3 - i % 4) * 200;
		put64(f[i] + cfg->off.frame_code, code);
		put64(f[i] + cfg->off.frame_instr, code + cfg->off.code_adaptive);
	}
	entry = make_frame(cfg, 0x1001, 0, 3); /* entry frames live on the C stack */
	for (int i = 0; i < 7; i++)
		link_frames(cfg, f[i], f[i + 1]);
	link_frames(cfg, f[7], entry);
	link_frames(cfg, entry, base);
	put64(tstate + 72, f[0]);
	return tstate;
}

static void test_frames_in_data_stack_chunks_in_order_are_shipped(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), f[8], tstate;
	uint32_t n;

	(void)state;
	tstate = build_chunked_315(&cfg, code, f);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 8);
}

static void test_frame_outside_data_stack_is_torn(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), f[8], tstate, forged;
	uint32_t n;

	(void)state;
	/* a copy of the top frame made elsewhere that skips a frame: it still reaches the
	 * base frame, so only its place in memory gives it away */
	tstate = build_chunked_315(&cfg, code, f);
	forged = make_frame(&cfg, code, 0, 0);
	link_frames(&cfg, forged, f[2]);
	put64(tstate + 72, forged);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
}

static void test_link_up_the_data_stack_is_torn(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), f[8], tstate;
	uint32_t n;

	(void)state;
	/* a stale `previous` pointing at a popped (higher) slot of the same chunk */
	tstate = build_chunked_315(&cfg, code, f);
	put64(tstate + 72, f[1]);
	link_frames(&cfg, f[1], f[0]);
	link_frames(&cfg, f[0], f[2]);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
	/* and a frame of a chunk that is not on the thread's chunk list */
	tstate = build_chunked_315(&cfg, code, f);
	put64(tstate + 256, 0);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
}

/* The window: the newest chunk's live part is one read; the older chunk's first frame and
 * header are reads of their own, and the window then moves down into it (one read for
 * the rest); the entry frame on the C stack is one read. Without datastack_top the newest
 * chunk is entered the same way as the older one. Same frames, same outcome. */
static void test_data_stack_window_saves_reads_and_ships_the_same(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), f[8], tstate;
	struct pw_frame first[8];
	uint32_t n;

	(void)state;
	tstate = build_chunked_315(&cfg, code, f);
	reads = 0;
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 8);
	assert_int_equal(reads, 6);
	memcpy(first, out, sizeof(first));
	put64(tstate + 264, 0);
	reads = 0;
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 8);
	assert_int_equal(reads, 1 + 2 * 3 + 1);
	assert_memory_equal(out, first, sizeof(first));
	/* a datastack_top past mapped memory: the window read fails, frames are read alone */
	put64(tstate + 264, MEM_BASE + MEM_SIZE + 4096);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_memory_equal(out, first, sizeof(first));
}

/* Checks judge the window's bytes as they judge a read's: a forged link inside the
 * window, up the data stack, is torn; so is a top frame past the end its chunk's header
 * (taken from the window) gives the chunk. */
static void test_forged_chain_inside_the_window_is_torn(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), f[8], tstate;
	uint32_t n;

	(void)state;
	tstate = build_chunked_315(&cfg, code, f);
	/* f[2] -> a popped frame between f[1] and f[0]: up the stack */
	put64(f[1] + 100 + cfg.off.frame_code, code);
	link_frames(&cfg, f[1] + 100, f[3]);
	link_frames(&cfg, f[2], f[1] + 100);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
	tstate = build_chunked_315(&cfg, code, f);
	link_frames(&cfg, f[1], f[3]); /* skips f[2]: still falling, still complete */
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 7);
	/* the newest chunk's header claims a size that ends below the top frame */
	tstate = build_chunked_315(&cfg, code, f);
	put64(f[0] - 3 * 200 - PW_CHUNK_DATA_OFFSET + 8, 3 * 200 + PW_CHUNK_DATA_OFFSET);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_TORN);
}

/* 300 frames 200 bytes apart in one 64 KiB chunk: more than one window; each frame is
 * shipped and the reads are the windows, not the frames. */
static void test_deep_chunk_is_walked_window_by_window(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), tstate = mem_alloc(1024), base = tstate + 888;
	uint64_t chunk = mem_alloc(65536), entry, prev = 0;
	uint32_t n;
	const int depth = 300;

	(void)state;
	cfg_for(15, &cfg);
	cfg.off.tstate_datastack_chunk = 256;
	cfg.off.tstate_read_size = 272;
	put64(tstate + 80, base);
	put64(tstate + 256, chunk);
	put64(chunk + 8, 65536);
	for (int i = 0; i < depth; i++) {
		uint64_t fr = chunk + PW_CHUNK_DATA_OFFSET + (uint64_t)(depth - 1 - i) * 200;

		put64(fr + cfg.off.frame_code, code);
		put64(fr + cfg.off.frame_instr, code + cfg.off.code_adaptive + 2ull * i);
		if (prev)
			link_frames(&cfg, prev, fr);
		else
			put64(tstate + 72, fr);
		prev = fr;
	}
	put64(tstate + 264, chunk + PW_CHUNK_DATA_OFFSET + depth * 200);
	entry = make_frame(&cfg, 0x1001, 0, 3);
	link_frames(&cfg, prev, entry);
	link_frames(&cfg, entry, base);
	reads = 0;
	assert_int_equal(run_walk(&cfg, tstate, 1000, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, depth);
	for (int i = 0; i < depth; i++)
		assert_int_equal(out[i].instr, (uint32_t)i);
	/* tstate, ceil(60,000 / 16,384) = 4 windows, the chunk header (below the first
	 * window), the entry frame */
	assert_int_equal(reads, 1 + 4 + 1 + 1);
}

/* ---- code tags ------------------------------------------------------------------------ */

/* A recursing function's code object is read once per walk, and every one of its frames
 * carries the tag read in this walk: after the object changes, the next walk reads the
 * new tag. */
static void test_code_tag_is_read_once_per_walk_and_anew_each_walk(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), other = mem_alloc(256), tstate, fr;
	uint32_t n, tag;

	(void)state;
	tstate = build_deep_315(&cfg, 50, code);
	cfg.off.code_tag = 88;
	cfg.off.code_tag_mask = 0x7f;
	cfg.off.code_tag_size = 56;
	put64(code + 96, 7); /* co_version */
	put64(other + 96, 8);
	/* frame 10 runs another function */
	fr = tstate;
	assert_int_equal(mem_read(&fr, 8, tstate + 72), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(mem_read(&fr, 8, fr + cfg.off.frame_previous), 0);
	put64(fr + cfg.off.frame_code, other);
	put64(fr + cfg.off.frame_instr, other + cfg.off.code_adaptive);
	reads = 0;
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(n, 50);
	tag = out[0].tag;
	for (uint32_t i = 0; i < n; i++)
		if (i != 10)
			assert_int_equal(out[i].tag, tag);
	assert_int_not_equal(out[10].tag, tag);
	assert_int_equal(reads, 1 + 51 + 2); /* tstate, frames and entry, two tags */
	assert_int_equal(walk_mem.nfresh, 2);
	assert_int_equal(walk_mem.fresh[0], 0);
	assert_int_equal(walk_mem.fresh[1], 10);
	put64(code + 96, 9); /* a new code object at the same address */
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_not_equal(out[0].tag, tag);
	assert_int_equal(out[49].tag, out[0].tag);
}

static void test_code_tag_follows_the_code_object_not_its_address(void **state)
{
	struct pw_proc cfg;
	uint64_t code = mem_alloc(256), name = mem_alloc(128), tstate = mem_alloc(512), leaf;
	uint32_t n, first;

	(void)state;
	cfg_for(11, &cfg);
	cfg.off.code_tag = 112;
	cfg.off.code_tag_mask = 0xf;
	cfg.off.code_tag_size = 32;
	cfg.code_tag_name = 2; /* co_qualname */
	put64(code + 128, name);
	put64(name + 16, 3);			    /* length */
	put64(name + 32, 1 << 6 | 1 << 5 | 1 << 2); /* ascii, compact, kind 1 */
	memcpy(mem + (name + 48 - MEM_BASE), "abc", 3);
	leaf = make_frame(&cfg, code, 1, 0);
	put8(leaf + cfg.off.frame_is_entry, 1);
	cfg.off.tstate_frame = 0;
	put64(tstate, leaf);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	first = out[0].tag;
	/* the hash and wstr fill in later: not part of the tag */
	put64(name + 24, 0x1234);
	put64(name + 40, 0x5678);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_equal(out[0].tag, first);
	/* same address, recycled name pointer, other text: another tag */
	memcpy(mem + (name + 48 - MEM_BASE), "abd", 3);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_not_equal(out[0].tag, first);
	/* an owned object's pointer changed: another tag */
	memcpy(mem + (name + 48 - MEM_BASE), "abc", 3);
	put64(code + 136, 0x4242);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_SHIPPED);
	assert_int_not_equal(out[0].tag, first);
	/* an unreadable name is a read fault, never a guess */
	put64(code + 128, 0xdead0000);
	assert_int_equal(run_walk(&cfg, tstate, 100, out, &n), PW_OUT_READ_FAULT);
}

/* ---- thread-state lookup ---------------------------------------------------------------- */

static void test_tfind_walks_threads_and_interpreters(void **state)
{
	struct pw_proc cfg;
	struct pw_tfind tf;
	uint64_t runtime = mem_alloc(256), interp1 = mem_alloc(128), interp2 = mem_alloc(128);
	uint64_t ts[4];
	int steps;

	(void)state;
	cfg_for(12, &cfg);
	cfg.runtime_addr = runtime;
	for (int i = 0; i < 4; i++) {
		ts[i] = mem_alloc(512);
		put32(ts[i] + cfg.off.tstate_thread_id, 100 + i);
	}
	put64(runtime + cfg.off.runtime_interp_head, interp1);
	put64(interp1 + cfg.off.interp_next, interp2);
	put64(interp1 + cfg.off.interp_threads_head, ts[0]);
	put64(ts[0] + cfg.off.tstate_next, ts[1]);
	put64(ts[1] + cfg.off.tstate_next, ts[2]);
	put64(interp2 + cfg.off.interp_threads_head, ts[3]);

	for (int want = 100; want <= 104; want++) {
		assert_int_equal(pw_tfind_init(&tf, &cfg, want), 0);
		for (steps = 0; steps < PW_MAX_THREAD_WALK; steps++)
			if (pw_tfind_step(&tf, &cfg))
				break;
		assert_int_equal(tf.err, 0);
		assert_int_equal(tf.found, want < 104 ? ts[want - 100] : 0);
	}
	/* a broken list is a read error, not a silent miss */
	put64(ts[1] + cfg.off.tstate_next, 0xbad00000);
	assert_int_equal(pw_tfind_init(&tf, &cfg, 103), 0);
	for (steps = 0; steps < PW_MAX_THREAD_WALK; steps++)
		if (pw_tfind_step(&tf, &cfg))
			break;
	assert_true(tf.err < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_314t_offset_is_taken_in_the_copy_the_pointer_is_in,
				       reset),
		cmocka_unit_test_setup(test_314t_pointer_in_no_copy_is_rejected, reset),
		cmocka_unit_test_setup(test_314t_recursion_reads_a_code_objects_copy_once, reset),
		cmocka_unit_test_setup(test_315_complete_chain_is_shipped_without_entry_frames,
				       reset),
		cmocka_unit_test_setup(test_315_current_is_base_frame_is_empty, reset),
		cmocka_unit_test_setup(test_315_chain_ending_in_null_before_base_is_torn, reset),
		cmocka_unit_test_setup(test_315_cycle_is_rejected_as_cycle, reset),
		cmocka_unit_test_setup(test_315_bad_owner_and_null_code_are_bad_frames, reset),
		cmocka_unit_test_setup(test_315_unreadable_frame_is_read_fault, reset),
		cmocka_unit_test_setup(test_deep_stack_within_bound_is_whole_and_beyond_is_depth,
				       reset),
		cmocka_unit_test_setup(test_shim_versions_need_entry_frame_at_bottom, reset),
		cmocka_unit_test_setup(test_311_needs_is_entry_at_bottom, reset),
		cmocka_unit_test_setup(test_311_instruction_before_start_is_none, reset),
		cmocka_unit_test_setup(test_310_frame_objects_end_at_null_f_back, reset),
		cmocka_unit_test_setup(test_frames_in_data_stack_chunks_in_order_are_shipped,
				       reset),
		cmocka_unit_test_setup(test_frame_outside_data_stack_is_torn, reset),
		cmocka_unit_test_setup(test_link_up_the_data_stack_is_torn, reset),
		cmocka_unit_test_setup(test_data_stack_window_saves_reads_and_ships_the_same,
				       reset),
		cmocka_unit_test_setup(test_forged_chain_inside_the_window_is_torn, reset),
		cmocka_unit_test_setup(test_deep_chunk_is_walked_window_by_window, reset),
		cmocka_unit_test_setup(test_code_tag_follows_the_code_object_not_its_address,
				       reset),
		cmocka_unit_test_setup(test_code_tag_is_read_once_per_walk_and_anew_each_walk,
				       reset),
		cmocka_unit_test_setup(test_tfind_walks_threads_and_interpreters, reset),
	};

	return cmocka_run_group_tests_name("walk", tests, NULL, NULL);
}
