// SPDX-License-Identifier: MIT
#include "native_merge.h"

int native_merge(const bool *native_is_eval, uint32_t nnative, const bool *py_entry,
		 uint32_t npy, struct merge_item *out, uint32_t cap)
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
