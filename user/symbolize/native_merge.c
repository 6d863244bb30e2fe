// SPDX-License-Identifier: MIT
#include "symbolize/native_merge.h"

#include <string.h>

int native_merge(const bool *native_is_eval, uint32_t nnative, const bool *py_entry, uint32_t npy,
		 struct merge_item *out, uint32_t cap)
{
	uint32_t evals = 0, groups = 0, n = 0, j = 0;

	for (uint32_t i = 0; i < nnative; i++)
		evals += native_is_eval[i];
	for (uint32_t k = 0; k < npy; k++)
		groups += k == 0 || py_entry[k];
	if (evals != groups || nnative - evals + npy > cap)
		return -1;
	for (uint32_t i = 0; i < nnative; i++) {
		if (!native_is_eval[i]) {
			out[n++] = (struct merge_item){ .python = false, .index = i };
			continue;
		}
		/* this activation's frames: from its entry frame up to the next one */
		do
			out[n++] = (struct merge_item){ .python = true, .index = j++ };
		while (j < npy && !py_entry[j]);
	}
	return (int)n;
}

/* The frame whose span holds `addr`, or -1: the root-most frame whose sp is at or below it
 * (sp falls from root to leaf, so that is a binary search), if its span reaches `addr`.
 * The root's span is empty: the thread's first frame (libc's) runs no eval loop, and an
 * unwind that ended early, taken for whole, must not put every activation there. */
static int64_t frame_holding(const uint64_t *sp, uint32_t n, uint64_t addr)
{
	uint32_t lo = 0, hi = n; /* the answer is in [lo, hi); hi: none */

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (sp[mid] <= addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == n || lo == 0 || addr >= sp[lo - 1])
		return -1;
	return lo;
}

static enum native_evals by_names(const bool *named_eval, uint32_t n, bool loop_named,
				  bool *is_eval)
{
	if (!loop_named)
		return NATIVE_EVALS_UNNAMED;
	memcpy(is_eval, named_eval, n * sizeof(*is_eval));
	return NATIVE_EVALS_FOUND;
}

enum native_evals native_find_evals(const uint64_t *sp, const bool *named_eval, uint32_t n,
				    const struct native_evidence *ev, bool *is_eval)
{
	bool sp_known = true;

	for (uint32_t i = 0; i < n; i++)
		sp_known &= sp[i] != 0;
	if (!ev->has_shims || !sp_known)
		return by_names(named_eval, n, ev->loop_named, is_eval);
	if (native_too_deep(ev))
		return NATIVE_EVALS_DEEP;
	/* spans must be in stack order for an address to tell one frame */
	for (uint32_t i = 1; i < n; i++)
		if (sp[i] > sp[i - 1])
			return NATIVE_EVALS_MISMATCH;
	memset(is_eval, 0, n * sizeof(*is_eval));
	for (uint32_t k = 0; k < ev->nshims; k++) {
		int64_t f = frame_holding(sp, n, ev->shim[k]);

		if (f < 0 || is_eval[f])
			return NATIVE_EVALS_MISMATCH;
		is_eval[f] = true;
	}
	/* where names say too, they must agree: a frame named eval that ran no entry frame is
	 * not an activation this walk saw (a forged name, or a view caught mid-call) */
	for (uint32_t i = 0; i < n; i++)
		if ((named_eval[i] && !is_eval[i]) ||
		    (ev->loop_named && is_eval[i] && !named_eval[i]))
			return NATIVE_EVALS_MISMATCH;
	return NATIVE_EVALS_FOUND;
}
