/* SPDX-License-Identifier: MIT */
/* Code object -> (qualname, file, line table), kept per (target, code address, tag) in a
 * byte-budgeted cache, from the sampler's code records or read with process_vm_readv.
 * Names are interned into function ids shared by all processes, so equal functions compare
 * equal. Everything read is untrusted: lengths are clamped, strings are decoded to valid
 * UTF-8, and output writers escape them. */
#ifndef PW_SYMTAB_H
#define PW_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/frame.h"
#include "inspect/pyver.h"

/* Longest name or path kept, in code points; longer ones are cut and marked. */
#define SYMTAB_MAX_STR 4096
/* Largest line table kept per code object (bytes); instructions past it get line 0. */
#define SYMTAB_MAX_LINETABLE (64 << 10)
/* Default byte budget of the code-object cache. */
#define SYMTAB_DEFAULT_BUDGET ((size_t)64 << 20)

struct symtab;

/* What the symbolizer needs of a target process. */
struct symtab_target {
	uint32_t id;	    /* target id: one lifetime of one process */
	pid_t pid;	    /* to read its memory; it may have exited */
	uint64_t code_type; /* address of PyCode_Type in it, 0 = unknown (not checked) */
	const struct py_objlayout *lay;
};

struct symtab_stats {
	size_t bytes, budget; /* the code-object cache */
	size_t entries;
	size_t func_bytes; /* interned names (functions, files, mappings) */
	uint64_t evictions;
	uint64_t names_collected;	    /* names freed by collections (symtab__gc_end) */
	uint64_t from_records, from_memory; /* entries made from code records / target reads */
	uint64_t bad_records;		    /* code records that did not check out */
};

/* A cache of at most `budget_bytes` (0: SYMTAB_DEFAULT_BUDGET). NULL on ENOMEM. */
struct symtab *symtab__new(size_t budget_bytes);
void symtab__free(struct symtab *st);

/* Handle of the code object at `code` in target `t` whose tag at sample time was `tag`,
 * reading it on a miss. Returns a handle >= 0 or a negative errno: -EFAULT/-ESRCH when
 * unreadable, -EINVAL when it is not a code object, -ESTALE when the object now at that
 * address is not the one sampled (freed and the address reused). A handle stays valid
 * until its entry is evicted; accessors return "unknown" values for a stale handle. */
int64_t symtab__resolve(struct symtab *st, const struct symtab_target *t, uint64_t code,
			uint32_t tag);
/* Add the code object described by a PW_REC_CODE record of target `t`. 0, -EINVAL (the
 * record does not check out; the sample's own lookup will try the target's memory),
 * -ENOMEM. */
int symtab__add_record(struct symtab *st, const struct symtab_target *t, const void *data,
		       size_t size);

/* Does this layout carry a code tag? */
static inline bool symtab_layout_has_tag(const struct py_objlayout *lay)
{
	return lay->tag_off != PW_OFF_NONE && lay->tag_mask;
}

/* Entry/cleanup shims that run as frames but are not user code (3.13+ `__init__` shim). */
bool symtab__is_shim(const struct symtab *st, int64_t sym);
/* Function id 0: no function ("?" in "?", line 0), the function of a stale handle. */
#define SYMTAB_NO_FUNC 0
/* Function id (interned qualname + file) of a symbol; SYMTAB_NO_FUNC when stale. */
uint32_t symtab__func(const struct symtab *st, int64_t sym);
/* Line executed at instruction `instr` (code units; PW_INSTR_NONE = not started). An
 * instruction without a location maps to the function's first line; 0 only when the
 * table cannot be decoded. */
int symtab__line(const struct symtab *st, int64_t sym, uint32_t instr);

const char *symtab__func_name(const struct symtab *st, uint32_t func);
const char *symtab__func_file(const struct symtab *st, uint32_t func);
int symtab__func_firstline(const struct symtab *st, uint32_t func);
size_t symtab__nfuncs(const struct symtab *st);
/* A function that is no code object: a label pywalk adds to stacks ("[off-cpu: sleeping]"),
 * with file "" (writers show the name alone). Its id, or -ENOMEM. */
int64_t symtab__pseudo_func(struct symtab *st, const char *name);
/* A function of machine code (FRAME_NATIVE or FRAME_KERNEL): its symbol name, or what
 * stands for it when unknown ("libfoo.so+0x1a2b", "[unknown]+0xffff..."), and the file it
 * is in ("" for the kernel proper, a module's name, a library's path). Interned with its
 * kind, so a C function never merges with a Python one of the same name. Its id, or
 * -ENOMEM. */
int64_t symtab__machine_func(struct symtab *st, enum frame_kind kind, const char *name,
			     const char *file);
/* What kind of frame a function id names (FRAME_PYTHON for SYMTAB_NO_FUNC). */
enum frame_kind symtab__func_kind(const struct symtab *st, uint32_t func);

/* Where machine code was mapped, as the target saw it: what pprof's Mapping says so that a
 * tool can symbolize addresses again. Interned for the profile; id 0 is "no mapping". */
#define SYMTAB_BUILD_ID_MAX 20
#define SYMTAB_KERNEL_MAPPING "[kernel.kallsyms]"
struct symtab_mapping {
	enum frame_kind kind; /* FRAME_NATIVE or FRAME_KERNEL */
	const char *path;     /* file path in the target's view; SYMTAB_KERNEL_MAPPING */
	uint8_t build_id[SYMTAB_BUILD_ID_MAX];
	uint8_t build_id_len;	       /* 0: unknown */
	uint64_t start, limit, offset; /* [start, limit) mapped from file offset `offset` */
};
/* The id (>= 1) of a mapping equal to *m, adding a copy when new, or -ENOMEM. */
int64_t symtab__mapping(struct symtab *st, const struct symtab_mapping *m);
/* Mapping `id` (NULL for 0 or out of range). */
const struct symtab_mapping *symtab__mapping_at(const struct symtab *st, uint32_t id);
/* How many mapping ids there are (ids are 1 .. count - 1). */
size_t symtab__nmappings(const struct symtab *st);

/* The names (functions, their files, mappings) live as long as someone holds their ids: a
 * cached code object, or a profile's frames. A target that keeps making functions under new
 * names, or processes whose libraries load at new addresses, would grow them for ever, so
 * past SYMTAB_NAMES_SHARE of the cache's budget (and twice what the last collection kept)
 * the owner of the profiles collects them: it marks what its live profiles hold, the cache
 * marks its own entries, and every other name is freed, its id given to a later name. */
#define SYMTAB_NAMES_SHARE 4
struct symtab_gc;
/* Do the names hold enough for a collection to be due? */
bool symtab__names_due(const struct symtab *st);
/* Start one (NULL on ENOMEM: no collection this time). */
struct symtab_gc *symtab__gc_begin(const struct symtab *st);
/* Function `func` and mapping `map` (0: none) are held. */
void symtab__gc_keep(struct symtab_gc *gc, uint32_t func, uint32_t map);
/* Free every name not kept and not held by a cached code object; frees gc. */
void symtab__gc_end(struct symtab *st, struct symtab_gc *gc);

/* Drop the entries of a target (it exited or exec'd; its addresses mean nothing now). */
void symtab__forget_target(struct symtab *st, uint32_t target);

const struct symtab_stats *symtab__stats(const struct symtab *st);

/* Decode a CPython compact str image to UTF-8 (exposed for unit tests). `data` holds `len`
 * characters of `kind` bytes each. Returns a malloc'ed string or NULL. */
char *symtab_decode_str(const uint8_t *data, size_t len, unsigned int kind, bool truncated);

#endif
