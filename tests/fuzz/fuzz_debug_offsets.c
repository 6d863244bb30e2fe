// SPDX-License-Identifier: MIT
/* libFuzzer target: pyver_from_debug_offsets() over an arbitrary _Py_DebugOffsets image.
 * When it accepts one, the config must be one the BPF walker and the symbolizer can use:
 * every field inside what they read, naturally aligned for the loads they do. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "inspect/pyver.h"

/* A field of `width` bytes at `off`, loaded from an image of `size` bytes. The walker's
 * loads are aligned (pw_load_u64 reads at off & ~7), so a misaligned field reads the
 * wrong bytes even when it fits. */
#define FIELD(name, off, width, size)                                                    \
	FUZZ_CHECK((off) % (width) == 0 && (off) + (width) <= (size),                    \
		   "%s at %u (%u bytes) outside the %u bytes read, or misaligned", name, \
		   (unsigned int)(off), (unsigned int)(width), (unsigned int)(size))

/* offsets added to an address and read with one PW_READ_USER: aligned pointers */
#define PTR(name, off) \
	FUZZ_CHECK((off) % 8 == 0, "%s offset %u misaligned", name, (unsigned int)(off))

static void check_walker(const struct pw_proc *cfg)
{
	const struct pw_offsets *o = &cfg->off;
	unsigned int fr = o->frame_read_size, ts = o->tstate_read_size;
	/* 3.10: f_lasti is an int and thread_id a pthread_t; later an instr_ptr and a tid */
	unsigned int instr_w = cfg->chain_kind == PW_CHAIN_FRAMEOBJ ? 4 : 8;
	unsigned int tid_w = cfg->thread_match == PW_MATCH_NATIVE_TID ? 4 : 8;

	FUZZ_CHECK(cfg->chain_kind >= PW_CHAIN_FRAMEOBJ && cfg->chain_kind <= PW_CHAIN_BASE,
		   "chain kind %u", cfg->chain_kind);
	FUZZ_CHECK(cfg->thread_match == PW_MATCH_NATIVE_TID ||
			   cfg->thread_match == PW_MATCH_PTHREAD,
		   "thread match %u", cfg->thread_match);
	FUZZ_CHECK(fr <= PW_FRAME_READ_MAX, "frame_read_size %u", fr);
	FUZZ_CHECK(ts <= PW_TSTATE_READ_MAX, "tstate_read_size %u", ts);

	FIELD("frame_previous", o->frame_previous, 8, fr);
	FIELD("frame_code", o->frame_code, 8, fr);
	FIELD("frame_instr", o->frame_instr, instr_w, fr);
	if (o->frame_owner != PW_OFF_NONE)
		FIELD("frame_owner", o->frame_owner, 1, fr);
	if (o->frame_is_entry != PW_OFF_NONE)
		FIELD("frame_is_entry", o->frame_is_entry, 1, fr);
	FUZZ_CHECK(cfg->chain_kind == PW_CHAIN_FRAMEOBJ || o->frame_owner != PW_OFF_NONE,
		   "no owner field for a chain kind that checks owners");
	if (cfg->chain_kind == PW_CHAIN_ISENTRY)
		FUZZ_CHECK(o->frame_is_entry != PW_OFF_NONE, "3.11 rule without is_entry");

	FIELD("tstate_thread_id", o->tstate_thread_id, tid_w, ts);
	FIELD("tstate_frame", o->tstate_frame, 8, ts);
	if (cfg->chain_kind == PW_CHAIN_BASE) {
		FUZZ_CHECK(o->tstate_base_frame != PW_OFF_NONE, "base rule without base_frame");
		FIELD("tstate_base_frame", o->tstate_base_frame, 8, ts);
	}
	if (o->tstate_datastack_chunk != PW_OFF_NONE)
		FIELD("tstate_datastack_chunk", o->tstate_datastack_chunk, 8, ts);

	PTR("runtime_interp_head", o->runtime_interp_head);
	PTR("interp_next", o->interp_next);
	PTR("interp_threads_head", o->interp_threads_head);
	PTR("tstate_next", o->tstate_next);
	PTR("code_adaptive", o->code_adaptive);
	if (o->cframe_current_frame != PW_OFF_NONE)
		PTR("cframe_current_frame", o->cframe_current_frame);
	/* free-threaded (thread-local bytecode): all three fields, or none */
	FUZZ_CHECK(!o->frame_tlbc_index == !o->code_tlbc && !o->code_tlbc == !o->code_ob_size,
		   "thread-local bytecode fields %u/%u/%u", o->frame_tlbc_index, o->code_tlbc,
		   o->code_ob_size);
	if (o->frame_tlbc_index) {
		FIELD("frame_tlbc_index", o->frame_tlbc_index, 4, fr);
		PTR("code_tlbc", o->code_tlbc);
		PTR("code_ob_size", o->code_ob_size);
	}

	FUZZ_CHECK(cfg->max_owner < 8, "max_owner %u", cfg->max_owner);
	FUZZ_CHECK(cfg->shim_owner == 0xff || cfg->shim_owner <= cfg->max_owner, "shim owner %u",
		   cfg->shim_owner);
	FUZZ_CHECK(cfg->code_tag_bits <= 3, "code_tag_bits %u", cfg->code_tag_bits);

	/* the tag window: the words the mask picks, read whole; the name word among them */
	if (o->code_tag != PW_OFF_NONE) {
		unsigned int top = 0;

		FUZZ_CHECK(o->code_tag_mask && o->code_tag_mask < (1u << PW_CODE_TAG_WORDS),
			   "tag mask %#x", o->code_tag_mask);
		while (o->code_tag_mask >> (top + 1))
			top++;
		FUZZ_CHECK(o->code_tag_size == 8 * (top + 1), "tag size %u for mask %#x",
			   o->code_tag_size, o->code_tag_mask);
		FUZZ_CHECK(cfg->code_tag_name == 0xff ||
				   (cfg->code_tag_name < PW_CODE_TAG_WORDS &&
				    (o->code_tag_mask >> cfg->code_tag_name & 1)),
			   "name word %u outside mask %#x", cfg->code_tag_name, o->code_tag_mask);
	} else {
		FUZZ_CHECK(cfg->code_tag_name == 0xff, "name word without a tag window");
	}
}

/* What symtab.c reads: co_read_size bytes of the code object (ob_type is checked
 * first), pointers and co_firstlineno from that image, a PY_STR_HDR_MAX-byte str header. */
static void check_symbolizer(const struct py_version *v)
{
	const struct py_objlayout *l = &v->obj;
	const struct pw_offsets *o = &v->cfg.off;
	unsigned int cr = l->co_read_size;

	FUZZ_CHECK(cr <= PY_CODE_HDR_MAX,
		   "co_read_size %u: the symbolizer rejects every code "
		   "object",
		   cr);
	FUZZ_CHECK(l->ob_type == 8 || l->ob_type == 24, "ob_type at %u", l->ob_type);
	FUZZ_CHECK(cr >= l->ob_type + 8u, "co_read_size %u does not cover ob_type", cr);
	FUZZ_CHECK(l->str_kind_shift == (v->free_threaded ? 8 : 2), "str kind at bit %u",
		   l->str_kind_shift);
	FUZZ_CHECK(v->cfg.obj.str_kind_shift == l->str_kind_shift, "capture's str kind bit");
	FUZZ_CHECK(l->co_filename + 8u <= cr, "co_filename %u", l->co_filename);
	FUZZ_CHECK(l->co_name + 8u <= cr, "co_name %u", l->co_name);
	FUZZ_CHECK(l->co_qualname + 8u <= cr, "co_qualname %u", l->co_qualname);
	FUZZ_CHECK(l->co_linetable + 8u <= cr, "co_linetable %u", l->co_linetable);
	FUZZ_CHECK(l->co_firstlineno + 4u <= cr, "co_firstlineno %u", l->co_firstlineno);
	FUZZ_CHECK(l->str_state + 4u <= PY_STR_HDR_MAX, "str_state %u: no str is readable",
		   l->str_state);
	FUZZ_CHECK(l->str_length + 8u <= PY_STR_HDR_MAX, "str_length %u: no str is readable",
		   l->str_length);
	FUZZ_CHECK(l->lt_format == (v->minor == 10 ? LINETABLE_PEP626 : LINETABLE_LOCATION),
		   "line table format %d for 3.%u", l->lt_format, v->minor);

	/* the symbolizer recomputes the walker's tag from the same window */
	FUZZ_CHECK(l->tag_off == o->code_tag && l->tag_mask == o->code_tag_mask &&
			   l->tag_size == o->code_tag_size &&
			   l->tag_name_word == v->cfg.code_tag_name,
		   "symbolizer and walker disagree on the tag window");
	if (l->tag_off != PW_OFF_NONE)
		FUZZ_CHECK(l->tag_off + l->tag_size <= cr, "tag window %u+%u past co_read_size %u",
			   l->tag_off, l->tag_size, cr);
}

static void check_version(const struct py_version *v)
{
	FUZZ_CHECK(v->major == 3 && v->minor >= 10 && v->minor <= 15, "version %u.%u", v->major,
		   v->minor);
	check_walker(&v->cfg);
	check_symbolizer(v);
}

/* The built-in 3.10-3.12 tables must pass the same checks. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (unsigned int minor = 10; minor <= 12; minor++) {
		struct py_version v;

		memset(&v, 0, sizeof(v));
		FUZZ_CHECK(!pyver_table(minor, &v), "no table for 3.%u", minor);
		v.major = 3;
		v.minor = minor;
		check_version(&v);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_version v;
	char why[256];
	uint8_t *img;
	int err;

	/* exact-size heap copy: a read past the image is an ASan report */
	img = malloc(size ? size : 1);
	FUZZ_CHECK(img, "malloc");
	memcpy(img, data, size);
	memset(&v, 0, sizeof(v));
	memset(why, 0x55, sizeof(why));
	why[0] = 0;
	err = pyver_from_debug_offsets(img, size, &v, why, sizeof(why));
	FUZZ_CHECK(err == 0 || err == -ENOTSUP || err == -EPROTO, "error %d", err);
	FUZZ_CHECK(memchr(why, 0, sizeof(why)), "reason not terminated");
	if (err == -ENOTSUP)
		FUZZ_CHECK(why[0], "refused without a reason");
	if (!err) {
		FUZZ_CHECK(v.minor >= 13, "3.%u from debug offsets", v.minor);
		FUZZ_CHECK(v.cfg.runtime_addr == 0, "runtime_addr set");
		check_version(&v);
	}
	free(img);
	return 0;
}
