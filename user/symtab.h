/* SPDX-License-Identifier: MIT */
/* Code object -> (qualname, file, line table), read once per (pid, code address) with
 * process_vm_readv. Names are interned into function ids shared by all processes, so equal
 * functions compare equal. Everything read is untrusted: lengths are clamped, strings are
 * decoded to valid UTF-8, and output writers escape them. */
#ifndef PW_SYMTAB_H
#define PW_SYMTAB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyver.h"

/* Longest name or path kept, in code points; longer ones are cut and marked. */
#define SYMTAB_MAX_STR 4096
/* Largest line table read (bytes). */
#define SYMTAB_MAX_LINETABLE (1 << 20)

struct symtab;

struct symtab *symtab__new(void);
void symtab__free(struct symtab *st);

/* Symbol id of the code object at `code` in `pid` whose tag at sample time was `tag`
 * (pw_code_tag), reading it on a miss. `code_type` is the address of PyCode_Type in the
 * target (0 = unknown, not checked). Returns an id >= 0 or a negative errno: -EFAULT/-ESRCH
 * when unreadable, -EINVAL when it is not a code object, -ESTALE when the object now at
 * that address is not the one sampled (freed and the address reused). */
int64_t symtab__resolve(struct symtab *st, pid_t pid, uint64_t code_type,
			const struct py_objlayout *lay, uint64_t code, uint32_t tag);

/* Does this layout carry a code tag? */
static inline bool symtab_layout_has_tag(const struct py_objlayout *lay)
{
	return lay->tag_off != PW_OFF_NONE && lay->tag_mask;
}

/* Entry/cleanup shims that run as frames but are not user code (3.13+ `__init__` shim). */
bool symtab__is_shim(const struct symtab *st, uint32_t sym);
/* Function id (interned qualname + file) of a symbol. */
uint32_t symtab__func(const struct symtab *st, uint32_t sym);
/* Line executed at instruction `instr` (code units; PW_INSTR_NONE = not started). An
 * instruction without a location maps to the function's first line; 0 only when the
 * table cannot be decoded. */
int symtab__line(const struct symtab *st, uint32_t sym, uint32_t instr);

const char *symtab__func_name(const struct symtab *st, uint32_t func);
const char *symtab__func_file(const struct symtab *st, uint32_t func);
int symtab__func_firstline(const struct symtab *st, uint32_t func);

/* Drop the cache entries of a process (it exited; its addresses may be reused). */
void symtab__forget_pid(struct symtab *st, pid_t pid);

/* Decode a CPython compact str image to UTF-8 (exposed for unit tests). `data` holds `len`
 * characters of `kind` bytes each. Returns a malloc'ed string or NULL. */
char *symtab_decode_str(const uint8_t *data, size_t len, unsigned int kind, bool truncated);

#endif
