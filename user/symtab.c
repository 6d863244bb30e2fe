// SPDX-License-Identifier: MIT
/* Symbolization of code objects, cached per (pid, code address). Strings are decoded from
 * CPython's compact str layout (1, 2 or 4 bytes per character) to UTF-8. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "linetable.h"
#include "proc.h"
#include "symtab.h"
#include "util.h"

struct func {
	char *name, *file;
	int firstline;
};

struct sym {
	uint32_t func;
	int firstlineno;
	uint8_t *linetable;
	uint32_t linetable_len;
	enum linetable_format lt_format;
	bool is_shim;
};

struct code_entry {
	uint64_t code;
	pid_t pid; /* 0 once forgotten */
	uint32_t tag;
	uint32_t sym;
};

struct symtab {
	struct func *funcs;
	size_t nfuncs, funcs_cap;
	struct htab func_index;

	struct sym *syms;
	size_t nsyms, syms_cap;

	struct code_entry *codes;
	size_t ncodes, codes_cap;
	struct htab code_index;
};

struct symtab *symtab__new(void)
{
	return calloc(1, sizeof(struct symtab));
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nfuncs; i++) {
		free(st->funcs[i].name);
		free(st->funcs[i].file);
	}
	for (size_t i = 0; i < st->nsyms; i++)
		free(st->syms[i].linetable);
	free(st->funcs);
	free(st->syms);
	free(st->codes);
	htab_free(&st->func_index);
	htab_free(&st->code_index);
	free(st);
}

static size_t utf8_put(char *out, uint32_t cp)
{
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd; /* lone surrogates (legal in str) are not valid UTF-8 */
	if (cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

char *symtab_decode_str(const uint8_t *data, size_t len, unsigned int kind, bool truncated)
{
	char *out = malloc(len * 4 + 4), *p = out;

	if (!out || (kind != 1 && kind != 2 && kind != 4)) {
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t c;

			memcpy(&c, data + 2 * i, 2);
			cp = c;
		} else {
			memcpy(&cp, data + 4 * i, 4);
		}
		p += utf8_put(p, cp);
	}
	if (truncated)
		p += utf8_put(p, 0x2026); /* '…' marks a name cut at SYMTAB_MAX_STR */
	*p = 0;
	return out;
}

/* Read a str object. Only compact strings (every str a code object holds) are accepted. */
static char *read_str(pid_t pid, const struct py_objlayout *lay, uint64_t addr)
{
	uint8_t hdr[PY_STR_HDR_MAX];
	size_t hdr_len;
	uint64_t len;
	uint32_t state;
	unsigned int kind;
	bool truncated = false;
	uint8_t *data;
	char *s;

	if (!addr || lay->str_state + 4u > sizeof(hdr) || lay->str_length + 8u > sizeof(hdr))
		return NULL;
	/* up to the end of both fields: a layout may put the length after the state */
	hdr_len = lay->str_state + 4u > lay->str_length + 8u ? lay->str_state + 4u :
							       lay->str_length + 8u;
	if (proc_read_mem(pid, addr, hdr, hdr_len))
		return NULL;
	memcpy(&len, hdr + lay->str_length, 8);
	memcpy(&state, hdr + lay->str_state, 4);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL; /* not compact, or garbage */
	if (len > SYMTAB_MAX_STR) {
		len = SYMTAB_MAX_STR;
		truncated = true;
	}
	data = malloc(len * kind + 1);
	if (!data)
		return NULL;
	if (proc_read_mem(pid,
			  addr + (((state >> 6) & 1) ? lay->str_ascii_data : lay->str_compact_data),
			  data, len * kind)) {
		free(data);
		return NULL;
	}
	s = symtab_decode_str(data, len, kind, truncated);
	free(data);
	return s;
}

static int read_bytes(pid_t pid, const struct py_objlayout *lay, uint64_t addr, uint8_t **out,
		      uint32_t *out_len)
{
	int64_t size;
	uint8_t *buf;
	int err;

	err = proc_read_mem(pid, addr + lay->bytes_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0 || size > SYMTAB_MAX_LINETABLE)
		return -EINVAL;
	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	err = proc_read_mem(pid, addr + lay->bytes_data, buf, size);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = (uint32_t)size;
	return 0;
}

struct func_key {
	const char *name, *file;
};

static bool func_eq(uint32_t id, const void *key, void *ctx)
{
	const struct symtab *st = ctx;
	const struct func_key *k = key;

	return !strcmp(st->funcs[id].name, k->name) && !strcmp(st->funcs[id].file, k->file);
}

/* Intern (name, file); takes ownership of both strings. Returns the id or -ENOMEM. */
static int64_t intern_func(struct symtab *st, char *name, char *file, int firstline)
{
	struct func_key k = { name, file };
	uint64_t hash = hash_bytes(name, strlen(name), hash_bytes(file, strlen(file), 0));
	uint32_t id;
	int err;

	if (htab_find(&st->func_index, hash, func_eq, &k, st, &id)) {
		free(name);
		free(file);
		return id;
	}
	err = grow_array((void **)&st->funcs, &st->funcs_cap, st->nfuncs + 1, sizeof(*st->funcs));
	if (!err)
		err = htab_insert(&st->func_index, hash, (uint32_t)st->nfuncs);
	if (err) {
		free(name);
		free(file);
		return err;
	}
	st->funcs[st->nfuncs] = (struct func){ .name = name, .file = file, .firstline = firstline };
	return (int64_t)st->nfuncs++;
}

static uint64_t load_ptr(const uint8_t *buf, uint16_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, 8);
	return v;
}

/* Read a code object and add it as a new symbol. Returns its id or a negative errno. */
static int64_t read_code(struct symtab *st, pid_t pid, uint64_t code_type,
			 const struct py_objlayout *lay, uint64_t code, uint32_t tag)
{
	uint8_t hdr[PY_CODE_HDR_MAX];
	char *name = NULL, *file = NULL;
	uint8_t *linetable = NULL;
	uint32_t linetable_len = 0;
	int32_t firstlineno;
	int64_t func;
	int err;

	if (lay->co_read_size > sizeof(hdr))
		return -EINVAL;
	err = proc_read_mem(pid, code, hdr, lay->co_read_size);
	if (err)
		return err;
	if (code_type && load_ptr(hdr, 8) != code_type)
		return -EINVAL; /* freed and reused memory, or not a code object at all */
	if (symtab_layout_has_tag(lay)) {
		__u64 words[PW_CODE_TAG_WORDS] = { 0 };

		if (lay->tag_off + lay->tag_size > lay->co_read_size || lay->tag_size > sizeof(words))
			return -EINVAL;
		uint32_t mine;

		memcpy(words, hdr + lay->tag_off, lay->tag_size);
		mine = pw_code_tag(words, lay->tag_mask);
		if (lay->tag_name_word < PW_CODE_TAG_WORDS) {
			__u64 name[PW_NAME_TAG_SIZE / 8];
			int err = proc_read_mem(pid, words[lay->tag_name_word] + PW_NAME_TAG_START,
						name, sizeof(name));

			if (err)
				return err;
			mine ^= pw_name_tag(name) * 0x9e3779b1u;
		}
		if (mine != tag)
			return -ESTALE; /* another code object took the sampled one's address */
	}
	memcpy(&firstlineno, hdr + lay->co_firstlineno, 4);
	name = read_str(pid, lay, load_ptr(hdr, lay->co_qualname));
	file = read_str(pid, lay, load_ptr(hdr, lay->co_filename));
	if (!name || !file) {
		err = -EFAULT;
		goto fail;
	}
	err = read_bytes(pid, lay, load_ptr(hdr, lay->co_linetable), &linetable, &linetable_len);
	if (err)
		goto fail;
	err = grow_array((void **)&st->syms, &st->syms_cap, st->nsyms + 1, sizeof(*st->syms));
	if (err)
		goto fail;
	/* 3.13+ `__init__` shim (_Py_InitCleanup): name and file are both "__init__" */
	bool is_shim = !strcmp(name, "__init__") && !strcmp(file, "__init__");
	func = intern_func(st, name, file, firstlineno);
	name = file = NULL;
	if (func < 0) {
		err = (int)func;
		goto fail;
	}
	st->syms[st->nsyms] = (struct sym){ .func = (uint32_t)func, .firstlineno = firstlineno,
					    .linetable = linetable, .linetable_len = linetable_len,
					    .lt_format = lay->lt_format, .is_shim = is_shim };
	return (int64_t)st->nsyms++;
fail:
	free(name);
	free(file);
	free(linetable);
	return err;
}

struct code_key {
	uint64_t code;
	pid_t pid;
	uint32_t tag;
};

static bool code_eq(uint32_t id, const void *key, void *ctx)
{
	const struct symtab *st = ctx;
	const struct code_key *k = key;

	return st->codes[id].code == k->code && st->codes[id].pid == k->pid &&
	       st->codes[id].tag == k->tag;
}

int64_t symtab__resolve(struct symtab *st, pid_t pid, uint64_t code_type,
			const struct py_objlayout *lay, uint64_t code, uint32_t tag)
{
	struct code_key k = { .code = code, .pid = pid, .tag = tag };
	uint64_t hash = hash_mix64(code ^ ((uint64_t)pid << 48) ^ ((uint64_t)tag << 16));
	uint32_t id;
	int64_t sym;
	int err;

	if (htab_find(&st->code_index, hash, code_eq, &k, st, &id))
		return st->codes[id].sym;
	sym = read_code(st, pid, code_type, lay, code, tag);
	if (sym < 0)
		return sym;
	err = grow_array((void **)&st->codes, &st->codes_cap, st->ncodes + 1, sizeof(*st->codes));
	if (!err)
		err = htab_insert(&st->code_index, hash, (uint32_t)st->ncodes);
	if (err)
		return err;
	st->codes[st->ncodes++] =
		(struct code_entry){ .code = code, .pid = pid, .tag = tag, .sym = (uint32_t)sym };
	return sym;
}

bool symtab__is_shim(const struct symtab *st, uint32_t sym)
{
	return sym < st->nsyms && st->syms[sym].is_shim;
}

uint32_t symtab__func(const struct symtab *st, uint32_t sym)
{
	return sym < st->nsyms ? st->syms[sym].func : 0;
}

int symtab__line(const struct symtab *st, uint32_t sym, uint32_t instr)
{
	const struct sym *s;
	int line = 0;

	if (sym >= st->nsyms)
		return 0;
	s = &st->syms[sym];
	if (instr == PW_INSTR_NONE)
		return s->firstlineno;
	if (linetable_line_for(s->lt_format, s->linetable, s->linetable_len, s->firstlineno, instr,
			       &line))
		return 0;
	/* instructions without a location (3.11+ prologues such as a coroutine's
	 * RETURN_GENERATOR/POP_TOP) belong to the function's header line */
	return line > 0 ? line : s->firstlineno;
}

const char *symtab__func_name(const struct symtab *st, uint32_t func)
{
	return func < st->nfuncs ? st->funcs[func].name : "?";
}

const char *symtab__func_file(const struct symtab *st, uint32_t func)
{
	return func < st->nfuncs ? st->funcs[func].file : "?";
}

int symtab__func_firstline(const struct symtab *st, uint32_t func)
{
	return func < st->nfuncs ? st->funcs[func].firstline : 0;
}

void symtab__forget_pid(struct symtab *st, pid_t pid)
{
	for (size_t i = 0; i < st->ncodes; i++)
		if (st->codes[i].pid == pid)
			st->codes[i].pid = 0;
}
