/* SPDX-License-Identifier: MIT */
/* Python thread names (threading.Thread.name) read from a target's memory: sys.modules ->
 * "threading" -> its _active dict (ident -> Thread) -> each Thread's _name and _native_id.
 * The OS name of a thread is what Python set only from 3.14 on (and cut to 15 bytes); this
 * is the name the program gave it. Everything read is untrusted: every read is checked,
 * every size bounded, every object's type checked by its flags, and a name that cannot be
 * read is left out (its OS name stands in for it). */
#ifndef PW_PYTHREADS_H
#define PW_PYTHREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inspect/pyver.h"

/* Characters of a name kept (a longer one is cut and ends in '…'); the bytes hold them
 * as UTF-8 with the mark. */
#define PYTHREADS_NAME_CHARS 60
#define PYTHREADS_NAME_SIZE (PYTHREADS_NAME_CHARS * 4 + 4)
/* Threads read from one _active dict at most. */
#define PYTHREADS_MAX 4096
/* Memory reads one call makes at most. */
#define PYTHREADS_MAX_READS 200000

/* Reads `len` bytes at `addr` of the target into buf: 0 or a negative errno. */
typedef int (*pythreads_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct pythreads_src {
	pythreads_read_fn read;
	void *ctx;
	unsigned int minor;    /* 3.10 .. 3.15 */
	uint64_t runtime_addr; /* _PyRuntime */
	uint16_t runtime_interp_head, interp_next;
	struct py_modlayout mod;
	uint16_t str_length, str_state, str_ascii_data, str_compact_data;
	uint16_t str_kind_shift; /* as py_objlayout's: 2, or 8 in a free-threaded build */
	uint16_t ob_type;	 /* 8, or 24 in a free-threaded build (a longer header) */
	/* in and out: the _active dict found last time, tried first (0: look it up) */
	uint64_t active_dict;
	/* in: most memory reads the next call may make, for a caller's own budget (0:
	 * PYTHREADS_MAX_READS); past it, what is left is not read (res->cut) */
	uint32_t max_reads;
};

struct pythread_name {
	uint32_t native_id; /* threading.get_native_id(): tid in the target's pid namespace */
	char name[PYTHREADS_NAME_SIZE];
};

/* What one read found, for the user's counts. */
struct pythreads_result {
	size_t nthreads;   /* entries of _active */
	size_t named;	   /* of them, with a name and a native id */
	size_t unreadable; /* of them, whose name or native id could not be read */
	size_t reads;	   /* memory reads made */
	bool cut;	   /* a read was refused (max_reads): threads may be missing */
};

/* The pythreads_src for an inspected target, reading through /proc (proc_read_mem). */
struct target;
void pythreads_src_of(const struct target *t, struct pythreads_src *src);

/* Read the names of every thread of the target that threading knows, into out[0..cap).
 * 0, or a negative errno (-ENOENT: threading is not imported; -EPROTO: something read did
 * not have the shape it must have; -EFAULT: memory could not be read; -E2BIG: the reads
 * allowed ran out before _active was found). res->reads and res->cut are set either way. */
int pythreads_read(struct pythreads_src *src, struct pythread_name *out, size_t cap,
		   struct pythreads_result *res);

#endif
