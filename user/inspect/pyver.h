/* SPDX-License-Identifier: MIT */
/* CPython version detection and the offsets each version needs: _Py_DebugOffsets on 3.13+,
 * small built-in tables for 3.10-3.12. Produces the BPF config and the symbolizer layout. */
#ifndef PW_PYVER_H
#define PW_PYVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "tag.h"
#include "inspect/elfinfo.h"

/* How a version encodes co_linetable (linetable.h reads both). */
enum linetable_format {
	LINETABLE_PEP626, /* CPython 3.10 co_linetable: (byte-offset delta u8, line delta s8) pairs */
	LINETABLE_LOCATION, /* CPython 3.11+ co_linetable location table */
};

/* How much of a code object and of a str object's header the symbolizer reads (symtab.c):
 * every offset of an accepted layout must fit inside them. */
#define PY_CODE_HDR_MAX 512
#define PY_STR_HDR_MAX 64

/* Where the symbolizer finds things in code, str and bytes objects of one version. */
struct py_objlayout {
	uint16_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
	uint16_t co_read_size; /* bytes of the code object header to read */
	uint16_t str_length, str_state, str_ascii_data, str_compact_data;
	uint16_t bytes_size, bytes_data;
	uint16_t str_kind_shift; /* bit of str state where `kind` starts: 2, or 8 free-threaded */
	uint16_t ob_type;	 /* PyObject.ob_type: 8, or 24 free-threaded */
	enum linetable_format lt_format;
	/* the code tag window, as in struct pw_offsets (PW_OFF_NONE: no tag) */
	uint16_t tag_off, tag_mask, tag_size;
	uint8_t tag_name_word; /* as pw_proc.code_tag_name */
};

/* Where the thread-name reader (pythreads.c) starts: sys.modules in the interpreter state,
 * and a heap type's shared attribute keys (ht_cached_keys). 0: not known. */
struct py_modlayout {
	uint16_t interp_modules;
	uint16_t ht_cached_keys;
};

/* What the asyncio task reader (asyncio_tasks.c) needs of the interpreter itself, from
 * _Py_DebugOffsets (3.14+; present is false before). */
struct py_asynclayout {
	bool present;
	uint16_t ob_type, tp_flags;
	uint16_t set_used, set_table, set_mask;
	uint16_t long_lv_tag, long_digit;
	uint16_t gen_iframe, gen_frame_state;
	uint16_t llist_next;
	uint16_t frame_stackpointer;
	/* enum _framestate, renumbered in 3.15: a generator suspended in await (3.15 also has
	 * a "locked" variant), and the first value of a finished one */
	int8_t fs_yield_from, fs_yield_from_locked, fs_finished;
	/* where a generator suspended in await keeps what it awaits: this many stack slots
	 * below its frame's stackpointer (3.15's SEND keeps a NULL above it) */
	uint8_t await_slot;
};

struct py_version {
	uint64_t hexversion; /* PY_VERSION_HEX, e.g. 0x030c01f0 */
	unsigned int major, minor, micro;
	bool free_threaded; /* a free-threaded build (3.14t; refused with -ENOTSUP elsewhere) */
	struct pw_proc cfg; /* the BPF map value, runtime_addr included */
	struct py_objlayout obj;
	struct py_modlayout mod;
	struct py_asynclayout aio;
};

/* "3.11.2", or "3.10" when the build does not record its micro version (3.10 has no
 * Py_Version): a guessed ".0" would be a wrong label. Returns buf. */
const char *py_version_str(const struct py_version *v, char *buf, size_t size);

/* Detect the version of the interpreter whose _PyRuntime is at `runtime_addr` in `pid`;
 * `elf` describes the binary holding it. On failure
 * returns -ENOTSUP (unsupported or free-threaded build) or -EFAULT/-ESRCH and puts a
 * sentence for the user in `why`. */
int pyver_detect(pid_t pid, uint64_t runtime_addr, const struct elf_pyinfo *elf,
		 struct py_version *out, char *why, size_t why_size);

/* Fill the config for version `minor` (3.10-3.12) from the built-in tables; exposed for
 * unit tests. 0 or -ENOTSUP. */
int pyver_table(unsigned int minor, struct py_version *out);

/* Fill the config from a _Py_DebugOffsets image (3.13+). 0, -ENOTSUP or -EPROTO. */
int pyver_from_debug_offsets(const uint8_t *dbg, size_t len, struct py_version *out, char *why,
			     size_t why_size);

#endif
