/* SPDX-License-Identifier: MIT */
/* --native: one root-first stack from a sample's native frames and its Python frames.
 * Every native activation of the eval loop is replaced by the Python frames it ran, which
 * start at an entry frame; when the two views cannot be matched one to one the sample is
 * rejected, never shipped half merged. Pure: no I/O, no symbols. */
#ifndef PW_NATIVE_MERGE_H
#define PW_NATIVE_MERGE_H

#include <stdbool.h>
#include <stdint.h>

struct merge_item {
	bool python;	/* a Python frame, else a native one */
	uint32_t index; /* into the root-first frames of its kind */
};

/* native_is_eval[i]: native frame i (root first) is an eval-loop activation; py_entry[j]:
 * Python frame j (root first) is the root-most one of its activation (frame 0 always is).
 * Writes at most `cap` items; returns how many, or -1 when the eval activations and the
 * Python activations do not pair up (or the merged stack exceeds cap). */
int native_merge(const bool *native_is_eval, uint32_t nnative, const bool *py_entry,
		 uint32_t npy, struct merge_item *out, uint32_t cap);

#endif
