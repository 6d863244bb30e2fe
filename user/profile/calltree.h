/* SPDX-License-Identifier: MIT */
/* A profile's stacks merged into one call tree, for the writers that draw it (the HTML page,
 * the SVG flame graph): frames as (name, file, line) string ids, root frames per process and
 * thread as the profile asks, and every node's children in one stable label order. Nothing
 * here escapes or lays out. */
#ifndef PW_CALLTREE_H
#define PW_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"
#include "profile/profile.h"
#include "lib/strtab.h"

#define CALLTREE_NONE UINT32_MAX

/* A frame as drawn: a Python function at a line, or a root frame ("comm (PID)",
 * "name (TID)": the Python name, else the comm) or a label which has no file (file
 * CALLTREE_NONE). Machine code frames (kind FRAME_NATIVE, FRAME_KERNEL) have no file
 * either: their name carries the kind's suffix ("do_syscall_64 [kernel]"), and writers
 * colour them by kind. */
struct calltree_frame {
	uint32_t name, file; /* string ids */
	int32_t line;
	uint32_t kind; /* enum frame_kind (root frames: FRAME_PSEUDO) */
};

/* A node; node 0 is the root ("all"), with frame CALLTREE_NONE. A child's id is always
 * greater than its parent's. */
struct calltree_node {
	uint32_t frame, parent, first_child, next_sibling, depth;
	uint64_t self;	/* samples whose stack ends here */
	uint64_t total; /* self plus every descendant's */
};

struct calltree {
	const struct profile *p;
	struct strtab *strs;
	struct calltree_frame *frames;
	size_t nframes, frames_cap;
	struct calltree_node *nodes;
	size_t nnodes, nodes_cap;
	uint32_t *rank;	      /* frame index -> position in label order */
	uint32_t *stack_node; /* agg stack index -> the node it ends at */
	/* building only */
	uint32_t *agg_map;  /* agg frame id -> frame index, NONE until used */
	uint32_t *root_map; /* string id of a root frame's label -> frame index */
	size_t root_map_cap;
	struct htab child_index; /* (parent, frame) -> node */
};

/* Merge every stack of `p` into `t` (zeroed by the caller). 0, -ENOMEM or -E2BIG; on
 * failure `t` still needs calltree_free. */
int calltree_build(struct calltree *t, const struct profile *p);
void calltree_free(struct calltree *t);

/* Distinct stacks as the writers show them: nodes where samples ended. */
size_t calltree_nstacks(const struct calltree *t);

/* Every node id once, parents before children and siblings in label order (as
 * flamegraph.pl sorts them, so equal profiles give equal files), into a malloc'ed array
 * of t->nnodes ids that the caller frees. NULL on ENOMEM. */
uint32_t *calltree_preorder(const struct calltree *t);

#endif
