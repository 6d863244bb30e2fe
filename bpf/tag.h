/* SPDX-License-Identifier: MIT */
/* The code-object tag, in one place: the sampler folds it from the code object at sample
 * time, userspace folds it again from what it reads (from the target or from a code
 * record) and names a frame only when the two agree (a freed code object whose address was
 * reused carries another tag). Plain C for BPF and userspace alike; no reads here. */
#ifndef PW_TAG_H
#define PW_TAG_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The tag window starts at pw_offsets.code_tag and spans up to PW_CODE_TAG_WORDS 8-byte
 * words; bit i of code_tag_mask selects word i. 3.12+ include co_version, unique per code
 * object created; older versions use pointers to objects the code object owns (names, line
 * table, constants) plus the text of its name (PW_NAME_TAG_*). */
#define PW_CODE_TAG_WORDS 8

/* Bytes of a str object folded for the name part: [16, 80) = length, hash, state, wstr,
 * the first 32 bytes of data (3.10/3.11 compact ASCII layout). */
#define PW_NAME_TAG_START 16
#define PW_NAME_TAG_SIZE 64

/* Fully unrolled in BPF: straight-line code costs the verifier one state, a loop many. */
#if defined(__clang__)
#define PW_UNROLL _Pragma("unroll")
#else
#define PW_UNROLL
#endif

static inline __u32 pw_window_tag(const __u64 *words, __u16 mask)
{
	__u64 h = 0xcbf29ce484222325ull;

	/* branch-free, so the verifier sees one path whatever the mask */
	PW_UNROLL
	for (int i = 0; i < PW_CODE_TAG_WORDS; i++) {
		__u64 keep = -(__u64)((mask >> i) & 1);

		h ^= words[i] & keep;
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (__u32)h ^ (__u32)(h >> 32);
}

/* Fold the immutable parts of a 3.10/3.11 compact str image (PW_NAME_TAG_SIZE bytes from
 * PW_NAME_TAG_START): its length, its kind/compact/ascii bits, and for ASCII strings the
 * first 32 characters (data at 48; bytes past the length are masked, they are not the
 * string's). The hash, interned bits and wstr fill in later, so they are left out. */
static inline __u32 pw_name_tag(const __u64 *w)
{
	__u64 len = w[0], state = w[2] & 0x7c, h = len * 0x9e3779b97f4a7c15ull ^ state;
	__u64 ascii = -(__u64)((state >> 6) & 1);

	PW_UNROLL
	for (int i = 0; i < 4; i++) {
		__u64 have = len > (__u64)(8 * i) ? len - 8 * i : 0;
		__u64 bits = have >= 8 ? 64 : 8 * have;
		__u64 keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);

		h = (h ^ (w[4 + i] & keep & ascii)) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (__u32)h ^ (__u32)(h >> 32);
}

/* The tag of a frame's code object: its window words (`mask` selects them) and, when the
 * version has no per-object version number, the name image `name` (NULL: not part of it). */
static inline __u32 pw_code_tag(const __u64 *words, __u16 mask, const __u64 *name)
{
	__u32 tag = pw_window_tag(words, mask);

	if (name)
		tag ^= pw_name_tag(name) * 0x9e3779b1u;
	return tag;
}

#endif /* PW_TAG_H */
