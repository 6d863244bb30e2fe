/* SPDX-License-Identifier: MIT */
/* Capture of a code object's identity (its header, qualname, filename and line table) into
 * a code record, written once as plain C over the read hook so the sampler and the unit
 * tests run the same code. The sampler ships a record the first time a CPU sees a (target,
 * code, tag), right after the walk, while the sampled thread is still stopped: the code
 * object is alive then, even when it is freed microseconds later (module bodies run once).
 * Nothing here decodes: userspace checks and decodes what was copied. */
#ifndef PW_CODE_H
#define PW_CODE_H

#include "abi.h"

#ifndef PW_INLINE
#define PW_INLINE static inline __attribute__((always_inline))
#endif

/* Bytes of a str object read to learn its length and kind (length and state lie below):
 * 48, or 64 for a free-threaded build's longer object header. */
#define PW_STR_HEAD 48
#define PW_STR_HEAD_FT 64

/* Copy the str object at `addr` (header and characters, at most PW_CODE_STR_MAX bytes) to
 * `dst`. Returns the bytes copied, 0 when it is not a readable compact str. */
PW_INLINE __u32 pw_capture_str(const struct pw_objoff *o, __u64 addr, __u8 *dst)
{
	__u64 head[8] = {}; /* 64 bytes, all written: the indexes below stay inside */
	__u64 len, state, kind, data, size;
	__u32 shift = o->str_kind_shift & 15;

	if (!addr || o->str_length > PW_STR_HEAD_FT - 8 || o->str_state > PW_STR_HEAD_FT - 4)
		return 0;
	if (o->str_length > PW_STR_HEAD - 8 || o->str_state > PW_STR_HEAD - 4) {
		if (PW_READ_USER(head, PW_STR_HEAD_FT, addr))
			return 0;
	} else if (PW_READ_USER(head, PW_STR_HEAD, addr)) {
		return 0;
	}
	len = head[(o->str_length / 8) & 7];
	state = head[(o->str_state / 8) & 7] >> (8 * (o->str_state & 7));
	kind = (state >> shift) & 7;
	if (!((state >> (shift + 3)) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return 0; /* not compact, or garbage: userspace decides */
	data = ((state >> (shift + 4)) & 1) ? o->str_ascii_data : o->str_compact_data;
	if (len > PW_CODE_STR_MAX)
		len = PW_CODE_STR_MAX;
	size = data + len * kind;
	if (size > PW_CODE_STR_MAX)
		size = PW_CODE_STR_MAX;
	if (PW_READ_USER(dst, (__u32)size, addr))
		return 0;
	return (__u32)size;
}

/* Fill the record at `rec` (PW_CODE_REC_BUF bytes) for the code object at `code` of the
 * process configured by `cfg`. Returns the record length, 0 when the code object itself
 * cannot be read (nothing worth shipping). */
PW_INLINE __u32 pw_code_capture(const struct pw_proc *cfg, __u32 pid, __u64 code, __u32 tag,
				__u8 *rec)
{
	struct pw_code_hdr *h = (struct pw_code_hdr *)rec;
	const struct pw_objoff *o = &cfg->obj;
	__u8 *head = rec + sizeof(*h);
	__u32 head_len = o->co_head_size, name_len, file_len, lt_len = 0, off;
	__u64 ptr, lt_size = 0;
	__u16 flags = 0;

	if (head_len > PW_CODE_HEAD_MAX)
		head_len = PW_CODE_HEAD_MAX;
	if (o->co_qualname + 8u > head_len || o->co_filename + 8u > head_len ||
	    o->co_linetable + 8u > head_len)
		return 0;
	if (PW_READ_USER(head, head_len, code))
		return 0;

	/* The masks below change no valid offset (each part is bounded above); they tell the
	 * BPF verifier that every write stays inside the PW_CODE_REC_BUF-byte buffer. */
	off = sizeof(*h) + head_len;
	__builtin_memcpy(&ptr, head + o->co_qualname, 8);
	name_len = pw_capture_str(o, ptr, rec + (off & 1023));
	if (!name_len)
		flags |= PW_CODEF_NO_NAME;
	off += name_len;
	__builtin_memcpy(&ptr, head + o->co_filename, 8);
	file_len = pw_capture_str(o, ptr, rec + (off & 2047));
	if (!file_len)
		flags |= PW_CODEF_NO_FILE;
	off += file_len;
	__builtin_memcpy(&ptr, head + o->co_linetable, 8);
	if (!ptr || o->bytes_size > 64 || o->bytes_data > 64 ||
	    PW_READ_USER(&lt_size, sizeof(lt_size), ptr + o->bytes_size) || lt_size > 0x7fffffff) {
		flags |= PW_CODEF_NO_LINETABLE;
		lt_size = 0;
	} else {
		lt_len = lt_size > PW_CODE_LINETABLE_MAX ? PW_CODE_LINETABLE_MAX : (__u32)lt_size;
		if (PW_READ_USER(rec + (off & 4095), lt_len, ptr + o->bytes_data)) {
			flags |= PW_CODEF_NO_LINETABLE;
			lt_len = 0;
		}
	}
	off += lt_len;

	h->kind = PW_REC_CODE;
	h->target = cfg->target;
	h->code = code;
	h->pid = pid;
	h->tag = tag;
	h->head_len = (__u16)head_len;
	h->name_len = (__u16)name_len;
	h->file_len = (__u16)file_len;
	h->flags = flags;
	h->lt_len = lt_len;
	h->lt_size = (__u32)lt_size;
	return off;
}

#endif /* PW_CODE_H */
