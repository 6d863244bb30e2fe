/* SPDX-License-Identifier: MIT */
/* --native: one root-first stack from a sample's native frames and its Python frames.
 * Every native activation of the eval loop is replaced by the Python frames it ran, which
 * start at an entry frame; when the two views cannot be matched one to one the sample is
 * rejected, never shipped half merged. Pure: no I/O, no symbols (the callers look those
 * up). doc/design.md, "Native stacks", tells how activations are found. */
#ifndef PW_NATIVE_MERGE_H
#define PW_NATIVE_MERGE_H

#include <stdbool.h>
#include <stdint.h>

struct merge_item {
	bool python;	/* a Python frame, else a native one */
	uint32_t index; /* into the root-first frames of its kind */
};

/* What tells a sample's eval-loop activations among its native frames. */
struct native_evidence {
	/* 3.12+: each activation keeps its entry frame on the C stack, inside its own native
	 * frame; these are their addresses (as the walk met them) */
	bool has_shims;
	const uint64_t *shim;
	uint32_t nshims; /* the entry frames the walk passed */
	uint32_t kept;	 /* how many of them `shim` holds */
	/* the eval loop is named wholly (a symbol table, or its whole body exported): every
	 * activation is a frame named so */
	bool loop_named;
};

enum native_evals {
	NATIVE_EVALS_FOUND = 0, /* is_eval[] says which frames are activations */
	NATIVE_EVALS_MISMATCH,	/* entry frames, native frames and names do not pair up */
	NATIVE_EVALS_DEEP,	/* more entry frames than the record carries */
	NATIVE_EVALS_UNNAMED,	/* neither entry frames nor names tell the activations */
};

/* More entry frames than the record could keep: the sample cannot be matched. */
static inline bool native_too_deep(const struct native_evidence *ev)
{
	return ev->has_shims && ev->nshims > ev->kept;
}

/* Which of the `n` native frames (root first) are eval activations. sp[i] is frame i's
 * stack pointer (0: unknown); it spans [sp[i], sp[i - 1]), its caller's sp (its CFA), the
 * leaf's from the sampled sp; the root (the thread's first frame) is never one. named_eval[i]: its symbol
 * is the eval loop's. With entry frames: a frame is an activation iff an entry frame lies
 * in its span; each must lie in a frame of its own, and a frame named eval must hold one
 * (and, where the loop is named wholly, a frame holding one must be named eval). Without
 * them (3.10/3.11, or an sp unknown): the names, when the loop is named wholly. */
enum native_evals native_find_evals(const uint64_t *sp, const bool *named_eval, uint32_t n,
				    const struct native_evidence *ev, bool *is_eval);

/* native_is_eval[i]: native frame i (root first) is an eval-loop activation; py_entry[j]:
 * Python frame j (root first) is the root-most one of its activation (frame 0 always is).
 * Writes at most `cap` items; returns how many, or -1 when the eval activations and the
 * Python activations do not pair up (or the merged stack exceeds cap). */
int native_merge(const bool *native_is_eval, uint32_t nnative, const bool *py_entry, uint32_t npy,
		 struct merge_item *out, uint32_t cap);

#endif
