// SPDX-License-Identifier: MIT
/* Version detection and per-version offsets. 3.13+ offsets come from the target's own
 * _Py_DebugOffsets (read at attach time); only 3.10-3.12 have hand tables, measured on live
 * processes of each version. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "inspect/proc.h"
#include "inspect/pyver.h"

#define DBG_COOKIE "xdebugpy"
#define DBG_READ_SIZE 1024

/* The walker loads fields with aligned loads (at off & ~7 for a pointer): every pointer
 * field must be 8-aligned, the thread id and 3.10's int f_lasti aligned to their width, as
 * they are in every real CPython. */
static bool offsets_aligned(const struct pw_proc *cfg)
{
	const struct pw_offsets *o = &cfg->off;
	unsigned int instr_align = cfg->chain_kind == PW_CHAIN_FRAMEOBJ ? 4 : 8;
	unsigned int tid_align = cfg->thread_match == PW_MATCH_NATIVE_TID ? 4 : 8;
	const uint16_t ptrs[] = { o->runtime_interp_head, o->interp_next,  o->interp_threads_head,
				  o->tstate_next,	  o->tstate_frame, o->frame_previous,
				  o->frame_code,	  o->code_adaptive };
	const uint16_t opt[] = { o->cframe_current_frame, o->tstate_base_frame,
				 o->tstate_datastack_chunk };

	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		if (ptrs[i] & 7)
			return false;
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
		if (opt[i] != PW_OFF_NONE && (opt[i] & 7))
			return false;
	if (cfg->gil_kind == PW_GIL_STRUCT &&
	    ((o->gil_ptr | o->tstate_interp | o->gil_holder) & 7 || o->gil_locked & 3))
		return false;
	if (cfg->gil_kind == PW_GIL_TSTATE_CURRENT && (o->gil_ptr & 7))
		return false;
	if (cfg->gil_kind == PW_GIL_TSTATE_FLAG && (o->tstate_holds_gil & 3))
		return false;
	if (o->frame_tlbc_index &&
	    ((o->frame_tlbc_index & 3) || ((o->code_tlbc | o->code_ob_size) & 7)))
		return false;
	return !(o->tstate_thread_id & (tid_align - 1)) && !(o->frame_instr & (instr_align - 1));
}

static uint16_t max16(uint16_t a, uint16_t b)
{
	return a > b ? a : b;
}

/* Bytes the BPF side must read so every configured field is inside the image. */
static void set_read_sizes(struct pw_proc *cfg)
{
	struct pw_offsets *o = &cfg->off;
	uint16_t f = 0, t = 0;

	f = max16(f, o->frame_previous + 8);
	f = max16(f, o->frame_code + 8);
	f = max16(f, o->frame_instr + 8);
	if (o->frame_owner != PW_OFF_NONE)
		f = max16(f, o->frame_owner + 1);
	if (o->frame_is_entry != PW_OFF_NONE)
		f = max16(f, o->frame_is_entry + 1);
	if (o->frame_tlbc_index)
		f = max16(f, o->frame_tlbc_index + 4);
	o->frame_read_size = (f + 7) & ~7;

	t = max16(t, o->tstate_thread_id + 8);
	t = max16(t, o->tstate_frame + 8);
	if (o->tstate_base_frame != PW_OFF_NONE)
		t = max16(t, o->tstate_base_frame + 8);
	if (o->tstate_datastack_chunk != PW_OFF_NONE) /* and datastack_top after it */
		t = max16(t, o->tstate_datastack_chunk + PW_DATASTACK_TOP_AFTER_CHUNK + 8);
	if (cfg->gil_kind == PW_GIL_STRUCT)
		t = max16(t, o->tstate_interp + 8);
	if (cfg->gil_kind == PW_GIL_TSTATE_FLAG)
		t = max16(t, o->tstate_holds_gil + 4);
	o->tstate_read_size = (t + 7) & ~7;
}

/* The code tag window of each version: only fields a code object never changes, at most
 * PW_CODE_TAG_WORDS words (offsets measured with offsetof against each version's headers).
 * 3.10: co_names .. co_linetable (64..128), plus co_name's text.
 * 3.11: co_filename .. co_linetable (112..144), plus co_qualname's text.
 * 3.12+: co_nfreevars + co_version (88..96; co_version is unique per code object created),
 *        co_localsplusnames .. co_linetable (96..144). */
static void set_code_tag(unsigned int minor, struct pw_proc *cfg, struct py_objlayout *obj)
{
	/* free-threaded builds: the same fields, after a header 16 bytes longer */
	uint16_t hdr = obj->ob_type > 8 ? obj->ob_type - 8 : 0;
	struct pw_offsets *o = &cfg->off;

	o->code_tag = PW_OFF_NONE;
	o->code_tag_mask = 0;
	o->code_tag_size = 0;
	cfg->code_tag_name = 0xff;
	if (minor == 10) {
		o->code_tag = 64;
		o->code_tag_mask = 0xff;
		cfg->code_tag_name = (112 - 64) / 8; /* co_name */
	} else if (minor == 11) {
		o->code_tag = 112;
		o->code_tag_mask = 0xf;
		cfg->code_tag_name = (128 - 112) / 8; /* co_qualname */
	} else if (minor >= 12 && obj->co_qualname == 128 + hdr && obj->co_linetable == 136 + hdr) {
		o->code_tag = 88 + hdr;
		o->code_tag_mask = 0x7f;
	}
	for (int i = 0; i < PW_CODE_TAG_WORDS; i++)
		if (o->code_tag_mask & (1u << i))
			o->code_tag_size = (uint16_t)(8 * (i + 1));
	obj->tag_off = o->code_tag;
	obj->tag_mask = o->code_tag_mask;
	obj->tag_size = o->code_tag_size;
	obj->tag_name_word = cfg->code_tag_name;
	if (o->code_tag != PW_OFF_NONE && obj->co_read_size < o->code_tag + o->code_tag_size)
		obj->co_read_size = o->code_tag + o->code_tag_size;
}

/* What the sampler's code capture reads, from the symbolizer's layout (one source). */
static void set_objoff(struct py_version *v)
{
	const struct py_objlayout *l = &v->obj;

	v->cfg.obj = (struct pw_objoff){ .co_head_size = l->co_read_size,
					 .co_qualname = l->co_qualname,
					 .co_filename = l->co_filename,
					 .co_linetable = l->co_linetable,
					 .str_length = l->str_length,
					 .str_state = l->str_state,
					 .str_ascii_data = l->str_ascii_data,
					 .str_compact_data = l->str_compact_data,
					 .bytes_size = l->bytes_size,
					 .bytes_data = l->bytes_data,
					 .str_kind_shift = l->str_kind_shift };
}

static void set_unicode_312(struct py_objlayout *obj)
{
	obj->str_length = 16;
	obj->str_state = 32;
	obj->str_ascii_data = 40;   /* sizeof(PyASCIIObject), 3.12+ (wstr removed) */
	obj->str_compact_data = 56; /* sizeof(PyCompactUnicodeObject), 3.12+ */
	obj->bytes_size = 16;
	obj->bytes_data = 32;
}

int pyver_table(unsigned int minor, struct py_version *out)
{
	struct pw_proc *cfg = &out->cfg;
	struct py_objlayout *obj = &out->obj;
	struct pw_offsets *o = &cfg->off;

	memset(cfg, 0, sizeof(*cfg));
	memset(obj, 0, sizeof(*obj));
	/* interp->modules (3.12: imports.modules), ht_cached_keys: offsetof in each version's
	 * headers, checked against sys.modules and a Thread's type on live interpreters */
	out->mod.interp_modules = minor == 10 ? 856 : minor == 11 ? 888 : 944;
	out->mod.ht_cached_keys = minor == 12 ? 880 : 872;
	o->cframe_current_frame = PW_OFF_NONE;
	o->tstate_base_frame = PW_OFF_NONE;
	o->frame_owner = PW_OFF_NONE;
	o->frame_is_entry = PW_OFF_NONE;
	o->tstate_datastack_chunk = PW_OFF_NONE;
	o->code_tag = PW_OFF_NONE;
	o->tstate_next = 8;
	o->interp_next = 0;
	cfg->shim_owner = 0xff;
	cfg->thread_match = PW_MATCH_NATIVE_TID;
	obj->lt_format = LINETABLE_LOCATION;

	switch (minor) {
	case 10:
		o->runtime_interp_head = 32;
		o->interp_threads_head = 8; /* tstate_head */
		o->tstate_thread_id = 176;  /* thread_id == pthread_self(); no native id in 3.10 */
		o->tstate_frame = 24;	    /* PyFrameObject *frame */
		o->frame_previous = 24;	    /* f_back */
		o->frame_code = 32;	    /* f_code */
		o->frame_instr = 96;	    /* f_lasti, int, in code units */
		cfg->chain_kind = PW_CHAIN_FRAMEOBJ;
		cfg->thread_match = PW_MATCH_PTHREAD;
		cfg->gil_kind = PW_GIL_TSTATE_CURRENT;
		o->gil_ptr = 568; /* _PyRuntime.gilstate.tstate_current */
		*obj = (struct py_objlayout){ .co_filename = 104,
					      .co_name = 112,
					      .co_qualname = 112,
					      .co_linetable = 120,
					      .co_firstlineno = 40,
					      .co_read_size = 128,
					      .str_length = 16,
					      .str_state = 32,
					      .str_ascii_data = 48,
					      .str_compact_data = 72,
					      .bytes_size = 16,
					      .bytes_data = 32,
					      .lt_format = LINETABLE_PEP626 };
		break;
	case 11:
		o->runtime_interp_head = 40;
		o->interp_threads_head = 16;
		o->tstate_thread_id = 160;
		o->tstate_frame = 56; /* cframe */
		o->cframe_current_frame = 8;
		o->frame_code = 32;
		o->frame_previous = 48;
		o->frame_instr = 56; /* prev_instr */
		o->frame_is_entry = 68;
		o->frame_owner = 69;
		o->code_adaptive = 184;
		o->tstate_datastack_chunk = 296;
		cfg->chain_kind = PW_CHAIN_ISENTRY;
		cfg->max_owner = 2;
		cfg->gil_kind = PW_GIL_TSTATE_CURRENT;
		o->gil_ptr = 576; /* _PyRuntime.gilstate.tstate_current */
		*obj = (struct py_objlayout){ .co_filename = 112,
					      .co_name = 120,
					      .co_qualname = 128,
					      .co_linetable = 136,
					      .co_firstlineno = 72,
					      .co_read_size = 144,
					      .str_length = 16,
					      .str_state = 32,
					      .str_ascii_data = 48,
					      .str_compact_data = 72,
					      .bytes_size = 16,
					      .bytes_data = 32,
					      .lt_format = LINETABLE_LOCATION };
		break;
	case 12:
		o->runtime_interp_head = 40;
		o->interp_threads_head = 72;
		o->tstate_thread_id = 144;
		o->tstate_frame = 56; /* cframe */
		o->cframe_current_frame = 0;
		o->frame_code = 0;
		o->frame_previous = 8;
		o->frame_instr = 56; /* prev_instr */
		o->frame_owner = 70;
		o->code_adaptive = 192;
		o->tstate_datastack_chunk = 232;
		cfg->chain_kind = PW_CHAIN_SHIM;
		cfg->max_owner = 3;
		cfg->shim_owner = 3; /* FRAME_OWNED_BY_CSTACK */
		/* offsetof against 3.12.1's internal headers (pycore_interp.h, pycore_gil.h) */
		cfg->gil_kind = PW_GIL_STRUCT;
		o->tstate_interp = 16;
		o->gil_ptr = 384;  /* interp->ceval.gil */
		o->gil_holder = 8; /* last_holder */
		o->gil_locked = 16;
		*obj = (struct py_objlayout){ .co_filename = 112,
					      .co_name = 120,
					      .co_qualname = 128,
					      .co_linetable = 136,
					      .co_firstlineno = 68,
					      .co_read_size = 144,
					      .lt_format = LINETABLE_LOCATION };
		set_unicode_312(obj);
		break;
	default:
		return -ENOTSUP;
	}
	obj->ob_type = 8;
	obj->str_kind_shift = 2;
	set_code_tag(minor, cfg, obj);
	set_read_sizes(cfg);
	set_objoff(out);
	return 0;
}

/* Positions (byte offsets) of the fields we use inside _Py_DebugOffsets; its layout changes
 * between minor versions, so one row per minor. 0 = field absent in that layout. */
struct dbg_layout {
	unsigned int minor;
	uint16_t size; /* sizeof(_Py_DebugOffsets) for that minor */
	uint16_t interpreters_head, interp_next, interp_threads_head;
	uint16_t ts_size, ts_next, ts_current_frame, ts_base_frame, ts_native_thread_id;
	uint16_t ts_datastack_chunk, ts_interp, ts_holds_gil;
	uint16_t is_ceval_gil, is_gil_runtime_state, is_gil_locked, is_gil_holder;
	uint16_t fr_previous, fr_executable, fr_instr_ptr, fr_owner;
	uint16_t co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
		co_adaptive;
	uint16_t bytes_size, bytes_sval;
	uint16_t str_state, str_length, str_ascii_size, str_compact_size;
	uint16_t is_imports_modules;	 /* interpreter_state.imports_modules */
	uint16_t ob_type, var_ob_size;	 /* pyobject.ob_type, tuple_object.ob_size */
	uint16_t fr_tlbc_index, co_tlbc; /* 3.14+: non-zero in free-threaded builds only */
	uint16_t ht_cached_keys;	 /* not in the table: offsetof(PyHeapTypeObject, ...) */
	/* 3.14+, for the asyncio task reader */
	uint16_t tp_flags, set_used, set_table, set_mask, long_lv_tag, long_digit;
	uint16_t gen_iframe, gen_frame_state, llist_next, fr_stackpointer;
	int8_t fs_yield_from, fs_yield_from_locked, fs_finished; /* not in the table */
	uint8_t await_slot;
};

static const struct dbg_layout dbg_layouts[] = {
	{ .minor = 13,
	  .size = 584,
	  .interpreters_head = 40,
	  .interp_next = 64,
	  .interp_threads_head = 72,
	  .ts_size = 152,
	  .ts_next = 168,
	  .ts_current_frame = 184,
	  .ts_native_thread_id = 200,
	  .ts_datastack_chunk = 208,
	  .ts_interp = 176,
	  .is_ceval_gil = 112,
	  .is_gil_runtime_state = 120,
	  .is_gil_locked = 136,
	  .is_gil_holder = 144,
	  .fr_previous = 232,
	  .fr_executable = 240,
	  .fr_instr_ptr = 248,
	  .fr_owner = 264,
	  .co_size = 272,
	  .co_filename = 280,
	  .co_name = 288,
	  .co_qualname = 296,
	  .co_linetable = 304,
	  .co_firstlineno = 312,
	  .co_adaptive = 344,
	  .bytes_size = 520,
	  .bytes_sval = 528,
	  .str_state = 544,
	  .str_length = 552,
	  .str_ascii_size = 560,
	  .is_imports_modules = 88,
	  .ht_cached_keys = 880 },
	{ .minor = 14,
	  .size = 760,
	  .interpreters_head = 40,
	  .interp_next = 64,
	  .interp_threads_head = 72,
	  .ts_size = 176,
	  .ts_next = 192,
	  .ts_current_frame = 208,
	  .ts_native_thread_id = 224,
	  .ts_datastack_chunk = 232,
	  .ts_interp = 200,
	  .is_ceval_gil = 120,
	  .is_gil_runtime_state = 128,
	  .is_gil_locked = 144,
	  .is_gil_holder = 152,
	  .fr_previous = 256,
	  .fr_executable = 264,
	  .fr_instr_ptr = 272,
	  .fr_owner = 288,
	  .co_size = 312,
	  .co_filename = 320,
	  .co_name = 328,
	  .co_qualname = 336,
	  .co_linetable = 344,
	  .co_firstlineno = 352,
	  .co_adaptive = 384,
	  .bytes_size = 600,
	  .bytes_sval = 608,
	  .str_state = 624,
	  .str_length = 632,
	  .str_ascii_size = 640,
	  .is_imports_modules = 96,
	  .ob_type = 408,
	  .var_ob_size = 464,
	  .fr_tlbc_index = 304,
	  .co_tlbc = 392,
	  .ht_cached_keys = 880,
	  .tp_flags = 440,
	  .set_used = 504,
	  .set_table = 512,
	  .set_mask = 520,
	  .long_lv_tag = 576,
	  .long_digit = 584,
	  .gen_iframe = 680,
	  .gen_frame_state = 688,
	  .llist_next = 696,
	  .fr_stackpointer = 296,
	  .fs_yield_from = -1,
	  .fs_yield_from_locked = -1,
	  .fs_finished = 1,
	  .await_slot = 1 },
	{ .minor = 15,
	  .size = 888,
	  .interpreters_head = 40,
	  .interp_next = 64,
	  .interp_threads_head = 72,
	  .ts_size = 176,
	  .ts_next = 192,
	  .ts_current_frame = 208,
	  .ts_base_frame = 216,
	  .ts_native_thread_id = 248,
	  .ts_datastack_chunk = 256,
	  .ts_interp = 200,
	  .ts_holds_gil = 272,
	  .is_ceval_gil = 120,
	  .is_gil_runtime_state = 128,
	  .is_gil_locked = 144,
	  .is_gil_holder = 152,
	  .fr_previous = 320,
	  .fr_executable = 328,
	  .fr_instr_ptr = 336,
	  .fr_owner = 352,
	  .co_size = 376,
	  .co_filename = 384,
	  .co_name = 392,
	  .co_qualname = 400,
	  .co_linetable = 408,
	  .co_firstlineno = 416,
	  .co_adaptive = 448,
	  .bytes_size = 696,
	  .bytes_sval = 704,
	  .str_state = 720,
	  .str_length = 728,
	  .str_ascii_size = 736,
	  .str_compact_size = 744,
	  .is_imports_modules = 96,
	  .ht_cached_keys = 888,
	  .ob_type = 472,
	  .var_ob_size = 560,
	  .tp_flags = 504,
	  .set_used = 600,
	  .set_table = 608,
	  .set_mask = 616,
	  .long_lv_tag = 672,
	  .long_digit = 680,
	  .gen_iframe = 808,
	  .gen_frame_state = 816,
	  .llist_next = 824,
	  .fr_stackpointer = 360,
	  .fs_yield_from = 2,
	  .fs_yield_from_locked = 3,
	  .fs_finished = 5,
	  .await_slot = 2 },
};

static uint64_t dbg_u64(const uint8_t *dbg, uint16_t pos)
{
	uint64_t v;

	memcpy(&v, dbg + pos, 8);
	return v;
}

/* Who holds the GIL, from the debug offsets: 3.15's tstate->holds_gil, or the GIL the
 * interpreter points to (ceval.gil) with its locked and last_holder fields, which the
 * offsets give inside the interpreter's own _gil: the sampler follows the pointer, so
 * they are taken relative to that struct. Values that do not fit leave it unknown (the
 * stacks are still sampled; only --mode gil needs it). */
static void set_gil_from_debug(const struct dbg_layout *L, const uint8_t *dbg, struct pw_proc *cfg)
{
	struct pw_offsets *o = &cfg->off;
	uint64_t tsi, ceval_gil, base, locked, holder, flag;

	cfg->gil_kind = PW_GIL_NONE;
	if (L->ts_holds_gil) {
		flag = dbg_u64(dbg, L->ts_holds_gil);
		if (flag && flag <= PW_TSTATE_READ_MAX - 4 && !(flag & 3)) {
			o->tstate_holds_gil = (uint16_t)flag;
			cfg->gil_kind = PW_GIL_TSTATE_FLAG;
			return;
		}
	}
	if (!L->is_ceval_gil)
		return;
	tsi = dbg_u64(dbg, L->ts_interp);
	ceval_gil = dbg_u64(dbg, L->is_ceval_gil);
	base = dbg_u64(dbg, L->is_gil_runtime_state);
	locked = dbg_u64(dbg, L->is_gil_locked);
	holder = dbg_u64(dbg, L->is_gil_holder);
	if (!tsi || tsi > PW_TSTATE_READ_MAX - 8 || (tsi & 7) || ceval_gil >= 0x10000 ||
	    (ceval_gil & 7) || !base || locked < base || holder < base || locked - base >= 256 ||
	    holder - base >= 256 || ((locked - base) & 3) || ((holder - base) & 7))
		return;
	o->tstate_interp = (uint16_t)tsi;
	o->gil_ptr = (uint16_t)ceval_gil;
	o->gil_locked = (uint16_t)(locked - base);
	o->gil_holder = (uint16_t)(holder - base);
	cfg->gil_kind = PW_GIL_STRUCT;
}

int pyver_from_debug_offsets(const uint8_t *dbg, size_t len, struct py_version *out, char *why,
			     size_t why_size)
{
	const struct dbg_layout *L = NULL;
	struct pw_offsets *o = &out->cfg.off;
	struct py_objlayout *obj = &out->obj;
	uint64_t version, v[48];
	unsigned int minor;
	size_t i, nv = 0;

	if (len < 24 || memcmp(dbg, DBG_COOKIE, 8))
		return -EPROTO;
	version = dbg_u64(dbg, 8);
	minor = (version >> 16) & 0xff;
	out->hexversion = version;
	out->major = (version >> 24) & 0xff;
	out->minor = minor;
	out->micro = (version >> 8) & 0xff;
	for (i = 0; i < sizeof(dbg_layouts) / sizeof(dbg_layouts[0]); i++)
		if (dbg_layouts[i].minor == minor)
			L = &dbg_layouts[i];
	out->free_threaded = dbg_u64(dbg, 16) != 0;
	/* Only 3.14t was built and checked here (its layout read from its own table); 3.13t
	 * and 3.15t differ in ways no table of theirs has shown. */
	if (out->free_threaded && (out->major != 3 || !L || !L->fr_tlbc_index)) {
		snprintf(
			why, why_size,
			"Python %u.%u.%u is a free-threaded build, which pywalk supports on 3.14 only",
			out->major, minor, out->micro);
		return -ENOTSUP;
	}
	if (out->major != 3 || !L) {
		snprintf(why, why_size,
			 "Python %u.%u.%u is not supported (pywalk supports 3.10 to 3.15)",
			 out->major, minor, out->micro);
		return -ENOTSUP;
	}
	if (len < L->size)
		return -EPROTO;

	memset(&out->cfg, 0, sizeof(out->cfg));
	o->runtime_interp_head = (uint16_t)(v[nv++] = dbg_u64(dbg, L->interpreters_head));
	o->interp_next = (uint16_t)(v[nv++] = dbg_u64(dbg, L->interp_next));
	o->interp_threads_head = (uint16_t)(v[nv++] = dbg_u64(dbg, L->interp_threads_head));
	o->tstate_next = (uint16_t)(v[nv++] = dbg_u64(dbg, L->ts_next));
	o->tstate_thread_id = (uint16_t)(v[nv++] = dbg_u64(dbg, L->ts_native_thread_id));
	o->tstate_frame = (uint16_t)(v[nv++] = dbg_u64(dbg, L->ts_current_frame));
	o->cframe_current_frame = PW_OFF_NONE;
	o->tstate_base_frame = PW_OFF_NONE;
	if (L->ts_base_frame)
		o->tstate_base_frame = (uint16_t)(v[nv++] = dbg_u64(dbg, L->ts_base_frame));
	o->frame_previous = (uint16_t)(v[nv++] = dbg_u64(dbg, L->fr_previous));
	o->frame_code = (uint16_t)(v[nv++] = dbg_u64(dbg, L->fr_executable));
	o->frame_instr = (uint16_t)(v[nv++] = dbg_u64(dbg, L->fr_instr_ptr));
	o->frame_owner = (uint16_t)(v[nv++] = dbg_u64(dbg, L->fr_owner));
	o->frame_is_entry = PW_OFF_NONE;
	o->tstate_datastack_chunk = (uint16_t)(v[nv++] = dbg_u64(dbg, L->ts_datastack_chunk));
	o->code_adaptive = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_adaptive));

	obj->co_filename = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_filename));
	obj->co_name = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_name));
	obj->co_qualname = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_qualname));
	obj->co_linetable = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_linetable));
	obj->co_firstlineno = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_firstlineno));
	obj->bytes_size = (uint16_t)(v[nv++] = dbg_u64(dbg, L->bytes_size));
	obj->bytes_data = (uint16_t)(v[nv++] = dbg_u64(dbg, L->bytes_sval));
	obj->str_state = (uint16_t)(v[nv++] = dbg_u64(dbg, L->str_state));
	obj->str_length = (uint16_t)(v[nv++] = dbg_u64(dbg, L->str_length));
	obj->str_ascii_data = (uint16_t)(v[nv++] = dbg_u64(dbg, L->str_ascii_size));
	if (L->str_compact_size)
		obj->str_compact_data = (uint16_t)(v[nv++] = dbg_u64(dbg, L->str_compact_size));
	obj->lt_format = LINETABLE_LOCATION;
	obj->ob_type = 8;
	o->code_ob_size = 16;
	if (L->ob_type) {
		obj->ob_type = (uint16_t)(v[nv++] = dbg_u64(dbg, L->ob_type));
		o->code_ob_size = (uint16_t)(v[nv++] = dbg_u64(dbg, L->var_ob_size));
	}
	/* the object header is 16 bytes, or 32 in a free-threaded build (ob_tid, flags,
	 * local and shared reference counts before ob_type): nothing else is known */
	if (obj->ob_type != (out->free_threaded ? 24 : 8) || o->code_ob_size != obj->ob_type + 8) {
		snprintf(why, why_size,
			 "Python %u.%u.%u debug offsets look corrupt (object header)", out->major,
			 minor, out->micro);
		return -EPROTO;
	}
	/* PyCompactUnicodeObject is the ASCII header plus utf8_length and utf8 */
	if (!L->str_compact_size)
		obj->str_compact_data = obj->str_ascii_data + 16;
	/* a free-threaded build's `interned` is a whole byte, so `kind` starts at bit 8 */
	obj->str_kind_shift = out->free_threaded ? 8 : 2;
	if (out->free_threaded) {
		o->frame_tlbc_index = (uint16_t)(v[nv++] = dbg_u64(dbg, L->fr_tlbc_index));
		o->code_tlbc = (uint16_t)(v[nv++] = dbg_u64(dbg, L->co_tlbc));
		if (!o->frame_tlbc_index || !o->code_tlbc) {
			snprintf(why, why_size,
				 "Python %u.%u.%u is free-threaded but its debug offsets have no "
				 "thread-local bytecode fields",
				 out->major, minor, out->micro);
			return -EPROTO;
		}
	} else {
		o->code_ob_size = 0; /* read only with thread-local bytecode */
	}
	out->mod.interp_modules = (uint16_t)(v[nv++] = dbg_u64(dbg, L->is_imports_modules));
	out->mod.ht_cached_keys = L->ht_cached_keys;
	/* PyHeapTypeObject: a free-threaded build's fields sit after a header 16 bytes longer */
	if (out->free_threaded)
		out->mod.ht_cached_keys += 16;
	memset(&out->aio, 0, sizeof(out->aio));
	if (L->gen_iframe) {
		struct py_asynclayout *a = &out->aio;

		a->ob_type = obj->ob_type;
		a->tp_flags = (uint16_t)(v[nv++] = dbg_u64(dbg, L->tp_flags));
		a->set_used = (uint16_t)(v[nv++] = dbg_u64(dbg, L->set_used));
		a->set_table = (uint16_t)(v[nv++] = dbg_u64(dbg, L->set_table));
		a->set_mask = (uint16_t)(v[nv++] = dbg_u64(dbg, L->set_mask));
		a->long_lv_tag = (uint16_t)(v[nv++] = dbg_u64(dbg, L->long_lv_tag));
		a->long_digit = (uint16_t)(v[nv++] = dbg_u64(dbg, L->long_digit));
		a->gen_iframe = (uint16_t)(v[nv++] = dbg_u64(dbg, L->gen_iframe));
		a->gen_frame_state = (uint16_t)(v[nv++] = dbg_u64(dbg, L->gen_frame_state));
		a->llist_next = (uint16_t)(v[nv++] = dbg_u64(dbg, L->llist_next));
		a->frame_stackpointer = (uint16_t)(v[nv++] = dbg_u64(dbg, L->fr_stackpointer));
		a->fs_yield_from = L->fs_yield_from;
		a->fs_yield_from_locked = L->fs_yield_from_locked;
		a->fs_finished = L->fs_finished;
		a->await_slot = L->await_slot;
		a->present = true;
	}

	/* Offsets come from target memory: refuse values the walker cannot use. */
	for (i = 0; i < nv; i++) {
		if (v[i] >= 0x4000) {
			snprintf(why, why_size, "Python %u.%u.%u debug offsets look corrupt",
				 out->major, minor, out->micro);
			return -EPROTO;
		}
	}
	obj->co_read_size = max16(max16(obj->co_filename, obj->co_name),
				  max16(obj->co_qualname, obj->co_linetable)) +
			    8;
	obj->co_read_size = max16(obj->co_read_size, obj->co_firstlineno + 4);

	out->cfg.thread_match = PW_MATCH_NATIVE_TID;
	out->cfg.max_owner = 3;
	out->cfg.shim_owner = 3; /* 3.13 FRAME_OWNED_BY_CSTACK, 3.14+ FRAME_OWNED_BY_INTERPRETER */
	out->cfg.chain_kind = minor >= 15 ? PW_CHAIN_BASE : PW_CHAIN_SHIM;
	/* 3.14+: f_executable is a _PyStackRef; Py_TAG_BITS is 3 in the default build, 1 in
	 * the free-threaded one (where a set bit 1 would be part of the address) */
	out->cfg.code_tag_bits = minor >= 14 ? (out->free_threaded ? 1 : 2) : 0;
	/* no GIL to attribute in a free-threaded build */
	if (!out->free_threaded)
		set_gil_from_debug(L, dbg, &out->cfg);
	/* ob_type is checked first, whatever the fields used */
	obj->co_read_size = max16(obj->co_read_size, obj->ob_type + 8);
	set_code_tag(minor, &out->cfg, obj);
	set_read_sizes(&out->cfg);
	set_objoff(out);
	/* What the symbolizer reads of a code object and a str header: a layout past them would
	 * be accepted here and then leave every frame unnamed. */
	if (obj->co_read_size > PY_CODE_HDR_MAX || obj->str_state + 4 > PY_STR_HDR_MAX ||
	    obj->str_length + 8 > PY_STR_HDR_MAX) {
		snprintf(why, why_size,
			 "Python %u.%u.%u debug offsets look corrupt (code or str layout "
			 "larger than pywalk reads)",
			 out->major, minor, out->micro);
		return -EPROTO;
	}
	if (!offsets_aligned(&out->cfg)) {
		snprintf(why, why_size, "Python %u.%u.%u debug offsets look corrupt (misaligned)",
			 out->major, minor, out->micro);
		return -EPROTO;
	}
	if (o->frame_read_size > PW_FRAME_READ_MAX || o->tstate_read_size > PW_TSTATE_READ_MAX) {
		snprintf(why, why_size,
			 "Python %u.%u.%u frame layout is larger than pywalk handles", out->major,
			 minor, out->micro);
		return -EPROTO;
	}
	return 0;
}

const char *py_version_str(const struct py_version *v, char *buf, size_t size)
{
	/* a release's PY_VERSION_HEX always has a level (0xa, 0xb, 0xc or 0xf) */
	if (!(v->hexversion & 0xffff))
		snprintf(buf, size, "%u.%u", v->major, v->minor);
	else
		snprintf(buf, size, "%u.%u.%u%s", v->major, v->minor, v->micro,
			 v->free_threaded ? "t" : ""); /* CPython's own name: 3.14t */
	return buf;
}

int pyver_detect(pid_t pid, uint64_t runtime_addr, const struct elf_pyinfo *elf,
		 struct py_version *out, char *why, size_t why_size)
{
	uint8_t dbg[DBG_READ_SIZE];
	int err;

	memset(out, 0, sizeof(*out));
	err = proc_read_mem(pid, runtime_addr, dbg, 24);
	if (err) {
		snprintf(why, why_size, "cannot read _PyRuntime at 0x%llx: %s",
			 (unsigned long long)runtime_addr, strerror(-err));
		return err;
	}
	if (!memcmp(dbg, DBG_COOKIE, 8)) {
		err = proc_read_mem(pid, runtime_addr, dbg, sizeof(dbg));
		if (err) {
			snprintf(why, why_size, "cannot read _Py_DebugOffsets: %s", strerror(-err));
			return err;
		}
		err = pyver_from_debug_offsets(dbg, sizeof(dbg), out, why, why_size);
		if (err == -EPROTO && !why[0])
			snprintf(why, why_size, "unreadable _Py_DebugOffsets");
	} else if (elf->py_version) {
		uint64_t elf_py_version = elf->py_version;

		/* 3.11/3.12: Py_Version (exported since 3.11) names the version */
		out->hexversion = elf_py_version;
		out->major = (elf_py_version >> 24) & 0xff;
		out->minor = (elf_py_version >> 16) & 0xff;
		out->micro = (elf_py_version >> 8) & 0xff;
		err = out->major == 3 && out->minor <= 12 ? pyver_table(out->minor, out) : -ENOTSUP;
		if (err)
			snprintf(why, why_size,
				 "Python %u.%u.%u is not supported (pywalk supports 3.10 to 3.15)",
				 out->major, out->minor, out->micro);
	} else if (elf->has_runtime_section) {
		/* neither debug offsets (3.13+) nor Py_Version (3.11+), but the .PyRuntime
		 * section that 3.10 introduced: 3.10 (its micro version is not recorded) */
		out->hexversion = 0x030a0000;
		out->major = 3;
		out->minor = 10;
		err = pyver_table(10, out);
	} else {
		snprintf(why, why_size,
			 "this Python is older than 3.10 (no .PyRuntime section), which pywalk "
			 "does not support");
		err = -ENOTSUP;
	}
	if (!err)
		out->cfg.runtime_addr = runtime_addr;
	return err;
}
