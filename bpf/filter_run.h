/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* --filter's interpreter, plain C over a probe hit, so that the BPF program and the unit
 * tests run the same code (user/trace/filter.c compiles the expressions into its
 * programs). The includer defines PW_INLINE, PW_FILTER_PID() and PW_FILTER_TID() (the
 * current thread's ids) and PW_FILTER_RUN_DECL, how pw_filter_run is declared (a global
 * function in BPF). */
#ifndef PW_FILTER_RUN_H
#define PW_FILTER_RUN_H

#include "abi.h"

#ifndef PW_INLINE
#define PW_INLINE static inline __attribute__((always_inline))
#endif

/* What one hit of a probe saw, for its filter (and --print). */
struct pw_hit {
	__u64 args[6];
	__u64 ret;
	__u32 nargs, has_ret; /* --print: which of them the probe has */
	__u64 comm[2];	      /* the thread's comm, NUL-padded */
	__u8 rec[PW_FILTER_REC_MAX] __attribute__((aligned(8)));
};

PW_INLINE __s64 pw_filter_field(const struct pw_hit *hit, const struct pw_filter_insn *in)
{
	__u32 off, size;
	__u64 v = 0;

	switch (in->field) {
	case PW_FF_PID:
		return (__s64)PW_FILTER_PID();
	case PW_FF_TID:
		return (__s64)PW_FILTER_TID();
	case PW_FF_ARG:
		return in->arg < 6 ? (__s64)hit->args[in->arg] : 0;
	case PW_FF_RET:
		return (__s64)hit->ret;
	case PW_FF_CTX:
		off = in->off;
		size = in->size;
		if (off > PW_FILTER_REC_MAX - 8 ||
		    (size != 1 && size != 2 && size != 4 && size != 8))
			return 0;
		__builtin_memcpy(&v, &hit->rec[off], 8);
		if (size == 8)
			return (__s64)v;
		/* little endian: the field is the low `size` bytes of the word at its offset */
		v <<= 64 - 8 * size;
		return in->is_signed ? (__s64)v >> (64 - 8 * size) : (__s64)(v >> (64 - 8 * size));
	}
	return 0;
}

PW_INLINE int pw_filter_compare(__s64 a, __u8 cmp, __s64 b)
{
	switch (cmp) {
	case PW_FCMP_EQ:
		return a == b;
	case PW_FCMP_NE:
		return a != b;
	case PW_FCMP_LT:
		return a < b;
	case PW_FCMP_GT:
		return a > b;
	case PW_FCMP_LE:
		return a <= b;
	case PW_FCMP_GE:
		return a >= b;
	}
	return 0;
}

/* Run filter `f` over `hit`: 1 when it passes. A global function, so the verifier checks it
 * once on its own instead of at every call site with the caller's state (which, with the
 * walk beside it, outgrows the verifier's budget). */
PW_FILTER_RUN_DECL pw_filter_run(const struct pw_filter *f, const struct pw_hit *hit)
{
	__u64 bits = 0, top; /* the stack of truth values, top in bit 0 */

	if (!f || !hit)
		return 1;
	for (__u32 i = 0; i < PW_FILTER_MAX_INSNS; i++) {
		const struct pw_filter_insn *in = &f->insn[i];

		if (i >= f->n)
			break;
		top = bits & 1;
		switch (in->op) {
		case PW_FOP_CMP:
			if (in->field == PW_FF_COMM) {
				const __u64 *want =
					(const __u64 *)
						f->strs[in->value & (PW_FILTER_MAX_STRS - 1)];
				int eq = hit->comm[0] == want[0] && hit->comm[1] == want[1];

				top = in->cmp == PW_FCMP_NE ? !eq : eq;
			} else {
				top = pw_filter_compare(pw_filter_field(hit, in), in->cmp,
							in->value);
			}
			bits = bits << 1 | top;
			break;
		case PW_FOP_AND:
			bits >>= 1;
			bits = (bits & ~1ull) | (top & bits & 1);
			break;
		case PW_FOP_OR:
			bits >>= 1;
			bits = (bits & ~1ull) | (top | (bits & 1));
			break;
		case PW_FOP_NOT:
			bits ^= 1;
			break;
		default:
			return 1;
		}
	}
	return bits & 1;
}

#endif /* PW_FILTER_RUN_H */
