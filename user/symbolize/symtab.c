// SPDX-License-Identifier: MIT
/* Symbolization of code objects, cached per (target, code address, tag) within a byte
 * budget (least recently used entries go first; a target that ends frees its entries).
 * Entries come from the sampler's code records, else from reading the target's memory.
 * Strings are decoded from CPython's compact str layout (1, 2 or 4 bytes per character) to
 * UTF-8; function names, files and mappings are interned while something holds them
 * (symtab__gc_end frees the rest). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lib/htab.h"
#include "lib/intern.h"
#include "symbolize/linetable.h"
#include "inspect/proc.h"
#include "lib/strtab.h"
#include "symbolize/symtab.h"
#include "tag.h"
#include "lib/util.h"

#define NONE UINT32_MAX

struct func {
	char *name;    /* owned; NULL: collected, its id free */
	uint32_t file; /* in `files`: a module's functions share their path */
	int firstline;
	enum frame_kind kind;
};

/* One code object of one target as it was sampled (its address and tag). */
struct code {
	uint64_t addr;
	uint32_t target, tag;
	uint32_t gen; /* bumped when the slot is freed: stale handles stop matching */
	uint32_t func;
	int firstlineno;
	uint8_t *linetable;
	uint32_t linetable_len;
	uint8_t lt_format;
	bool is_shim, live;
	uint32_t lru_prev, lru_next; /* most recently used first; lru_next links free slots */
};

struct symtab {
	struct intern funcs; /* struct func, by (name, file, kind) */
	struct intern
		maps; /* struct symtab_mapping (path owned; NULL: collected), by every field */
	struct strtab *files; /* file paths */
	size_t func_bytes;
	size_t nmaps_live; /* mappings held (not collected), id 0 too */
	size_t names_kept; /* held_bytes() the last collection left */

	struct code *codes;
	size_t ncodes, codes_cap;
	struct htab code_index;
	uint32_t lru_head, lru_tail, free_head;
	size_t code_bytes; /* live entries and their line tables */
	size_t nlive;
	size_t budget;
	struct symtab_stats stats;
};

static int64_t intern_func(struct symtab *st, char *name, char *file, int firstline,
			   enum frame_kind kind);

struct func_key {
	const char *name;
	uint32_t file;
	enum frame_kind kind;
};

static bool func_eq(const void *item, const void *key)
{
	const struct func *f = item;
	const struct func_key *k = key;

	return f->file == k->file && f->kind == k->kind && !strcmp(f->name, k->name);
}

static uint64_t func_hash(const struct func_key *k)
{
	return hash_bytes(k->name, strlen(k->name), hash_mix64((uint64_t)k->kind << 32 | k->file));
}

static bool map_eq(const void *item, const void *key)
{
	const struct symtab_mapping *m = item, *k = key;

	return m->kind == k->kind && m->start == k->start && m->limit == k->limit &&
	       m->offset == k->offset && m->build_id_len == k->build_id_len &&
	       !memcmp(m->build_id, k->build_id, m->build_id_len) && !strcmp(m->path, k->path);
}

static uint64_t map_hash(const struct symtab_mapping *m)
{
	return hash_bytes(m->path, strlen(m->path),
			  hash_mix64(m->start ^ hash_mix64(m->offset ^ m->limit)));
}

struct symtab *symtab__new(size_t budget_bytes)
{
	struct symtab *st = calloc(1, sizeof(*st));
	char *name, *file;

	if (!st)
		return NULL;
	st->funcs = (struct intern)INTERN_INIT(struct func, func_eq);
	st->maps = (struct intern)INTERN_INIT(struct symtab_mapping, map_eq);
	st->files = strtab__new();
	/* mapping id 0 is no mapping: what a Python frame has */
	if (!st->files || intern_add(&st->maps, 0, &(struct symtab_mapping){ .path = "" }) != 0) {
		strtab__free(st->files);
		intern_free(&st->maps);
		free(st);
		return NULL;
	}
	st->budget = budget_bytes ? budget_bytes : SYMTAB_DEFAULT_BUDGET;
	st->lru_head = st->lru_tail = st->free_head = NONE;
	/* function id 0 is no function: what the accessors give for a handle whose entry is
	 * gone, so it can never name the first function the profile interned */
	name = strdup("?");
	file = strdup("?");
	if (!name || !file) {
		free(name);
		free(file);
		symtab__free(st);
		return NULL;
	}
	if (intern_func(st, name, file, 0, FRAME_PYTHON) != SYMTAB_NO_FUNC) {
		symtab__free(st);
		return NULL;
	}
	return st;
}

void symtab__free(struct symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < intern_count(&st->funcs); i++)
		free(((struct func *)intern_at(&st->funcs, i))->name);
	for (size_t i = 0; i < st->ncodes; i++)
		free(st->codes[i].linetable);
	intern_free(&st->funcs);
	/* id 0's path is a literal */
	for (size_t i = 1; i < intern_count(&st->maps); i++)
		free((char *)((struct symtab_mapping *)intern_at(&st->maps, i))->path);
	intern_free(&st->maps);
	strtab__free(st->files);
	free(st->codes);
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
		if (!cp) {
			/* a NUL would end the C string here: the internal form keeps the rest */
			memcpy(p, ESCAPE_NUL, 2);
			p += 2;
			continue;
		}
		p += utf8_put(p, cp);
	}
	if (truncated)
		p += utf8_put(p, 0x2026); /* '…' marks a name cut at SYMTAB_MAX_STR */
	*p = 0;
	return out;
}

/* Decode the str image `img` (len bytes of a str object from its start). When the image
 * holds fewer characters than the string has and `pid` is given, the rest is read from
 * the target at `addr`; failing that the name is cut and marked. NULL when it is not a
 * compact str. Only compact strings (every str a code object holds) are accepted. */
static char *str_from_image(const struct py_objlayout *lay, const uint8_t *img, size_t len,
			    pid_t pid, uint64_t addr)
{
	uint64_t length, want, have;
	uint32_t state;
	unsigned int kind;
	size_t data_off;
	uint8_t *data;
	char *s;

	if (lay->str_state + 4u > len || lay->str_length + 8u > len)
		return NULL;
	memcpy(&length, img + lay->str_length, 8);
	memcpy(&state, img + lay->str_state, 4);
	kind = (state >> lay->str_kind_shift) & 7;
	if (!((state >> (lay->str_kind_shift + 3)) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL; /* not compact, or garbage */
	data_off = ((state >> (lay->str_kind_shift + 4)) & 1) ? lay->str_ascii_data
							      : lay->str_compact_data;
	want = length > SYMTAB_MAX_STR ? SYMTAB_MAX_STR : length;
	have = len > data_off ? (len - data_off) / kind : 0;
	if (have >= want)
		return symtab_decode_str(img + data_off, want, kind, length > want);
	data = malloc(want * kind + 1);
	if (!data)
		return NULL;
	if (pid > 0 && addr && !proc_read_mem(pid, addr + data_off, data, want * kind))
		s = symtab_decode_str(data, want, kind, length > want);
	else if (have)
		s = symtab_decode_str(img + data_off, have, kind, true); /* all that is left */
	else
		s = NULL;
	free(data);
	return s;
}

/* Read a str object from the target. */
static char *read_str(pid_t pid, const struct py_objlayout *lay, uint64_t addr)
{
	uint8_t img[PY_STR_HDR_MAX];
	size_t len = lay->str_state + 4u > lay->str_length + 8u ? lay->str_state + 4u
								: lay->str_length + 8u;

	/* the header only: str_from_image reads the characters */
	if (!addr || len > sizeof(img) || proc_read_mem(pid, addr, img, len))
		return NULL;
	return str_from_image(lay, img, len, pid, addr);
}

/* Read the data of the bytes object at `addr`, at most SYMTAB_MAX_LINETABLE of it (a longer
 * table is cut: later instructions get line 0); *full_size (may be NULL) gets its size. */
static int read_bytes(pid_t pid, const struct py_objlayout *lay, uint64_t addr, uint8_t **out,
		      uint32_t *out_len, uint64_t *full_size)
{
	int64_t size;
	uint8_t *buf;
	int err;

	err = proc_read_mem(pid, addr + lay->bytes_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0)
		return -EINVAL;
	if (full_size)
		*full_size = (uint64_t)size;
	if (size > SYMTAB_MAX_LINETABLE)
		size = SYMTAB_MAX_LINETABLE;
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

/* Intern (name, file, kind); takes ownership of both strings. Returns the id or -ENOMEM. */
static int64_t intern_func(struct symtab *st, char *name, char *file, int firstline,
			   enum frame_kind kind)
{
	int64_t file_id = strtab__intern(st->files, file), id;
	struct func_key k = { name, (uint32_t)file_id, kind };
	struct func f;

	free(file);
	if (file_id < 0) {
		free(name);
		return file_id;
	}
	id = intern_find(&st->funcs, func_hash(&k), &k);
	if (id >= 0) {
		free(name);
		return id;
	}
	f = (struct func){
		.name = name, .file = (uint32_t)file_id, .firstline = firstline, .kind = kind
	};
	id = intern_add(&st->funcs, func_hash(&k), &f);
	if (id < 0)
		free(name);
	else
		st->func_bytes += strlen(name) + 1 + sizeof(struct func);
	return id;
}

static uint64_t load_ptr(const uint8_t *buf, uint16_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, 8);
	return v;
}

/* Images of a code object's parts, from a code record; a NULL part is read from the target. */
struct code_parts {
	const uint8_t *head, *name, *file, *linetable;
	size_t head_len, name_len, file_len, linetable_len;
	size_t linetable_size; /* the table's full size, when the copy was cut */
	bool linetable_cut;
};

/* The whole line table of the object a code record copied the start of, read from the
 * target, or NULL. Only while the object there is the one copied: the size the record
 * gives and the same first bytes. A code object that lived a millisecond is gone by now,
 * and the memory of its table may hold another table, whose lines are not this code's. */
static uint8_t *rest_of_table(const struct symtab_target *t, const uint8_t *head,
			      const struct code_parts *parts, uint32_t *len)
{
	uint64_t size = 0;
	uint8_t *lt;

	if (read_bytes(t->pid, t->lay, load_ptr(head, t->lay->co_linetable), &lt, len, &size))
		return NULL;
	if (size != parts->linetable_size || *len < parts->linetable_len ||
	    memcmp(lt, parts->linetable, parts->linetable_len)) {
		free(lt);
		*len = 0;
		return NULL;
	}
	return lt;
}

/* The tag of the code object whose header image is `head`, as the sampler folds it; the name
 * part (3.10/3.11) from `name_img` when given, else read from the target. */
static int tag_of(const struct symtab_target *t, const uint8_t *head, const uint8_t *name_img,
		  size_t name_len, uint32_t *tag)
{
	const struct py_objlayout *lay = t->lay;
	__u64 words[PW_CODE_TAG_WORDS] = { 0 }, name[PW_NAME_TAG_SIZE / 8] = { 0 };

	if (lay->tag_off + lay->tag_size > lay->co_read_size || lay->tag_size > sizeof(words))
		return -EINVAL;
	memcpy(words, head + lay->tag_off, lay->tag_size);
	if (lay->tag_name_word >= PW_CODE_TAG_WORDS) {
		*tag = pw_code_tag(words, lay->tag_mask, NULL);
		return 0;
	}
	if (name_img) {
		/* bytes past the image are past the string: the fold masks them */
		if (name_len > PW_NAME_TAG_START)
			memcpy(name, name_img + PW_NAME_TAG_START,
			       name_len - PW_NAME_TAG_START < sizeof(name)
				       ? name_len - PW_NAME_TAG_START
				       : sizeof(name));
	} else {
		int err = proc_read_mem(t->pid, words[lay->tag_name_word] + PW_NAME_TAG_START, name,
					sizeof(name));

		if (err)
			return err;
	}
	*tag = pw_code_tag(words, lay->tag_mask, name);
	return 0;
}

static void lru_unlink(struct symtab *st, uint32_t i)
{
	struct code *c = &st->codes[i];

	if (c->lru_prev != NONE)
		st->codes[c->lru_prev].lru_next = c->lru_next;
	else
		st->lru_head = c->lru_next;
	if (c->lru_next != NONE)
		st->codes[c->lru_next].lru_prev = c->lru_prev;
	else
		st->lru_tail = c->lru_prev;
}

static void lru_push_front(struct symtab *st, uint32_t i)
{
	struct code *c = &st->codes[i];

	c->lru_prev = NONE;
	c->lru_next = st->lru_head;
	if (st->lru_head != NONE)
		st->codes[st->lru_head].lru_prev = i;
	st->lru_head = i;
	if (st->lru_tail == NONE)
		st->lru_tail = i;
}

static uint64_t code_hash(uint32_t target, uint64_t addr, uint32_t tag)
{
	return hash_mix64(addr ^ ((uint64_t)target << 40) ^ ((uint64_t)tag << 8) ^ target);
}

static size_t entry_bytes(const struct code *c)
{
	return sizeof(*c) + c->linetable_len;
}

/* Free slot i: out of the index, the LRU list and the byte count; onto the free list. */
static void release(struct symtab *st, uint32_t i)
{
	struct code *c = &st->codes[i];

	htab_remove(&st->code_index, code_hash(c->target, c->addr, c->tag), i);
	lru_unlink(st, i);
	st->code_bytes -= entry_bytes(c);
	free(c->linetable);
	c->linetable = NULL;
	c->linetable_len = 0;
	c->live = false;
	c->gen++;
	st->nlive--;
	c->lru_next = st->free_head;
	st->free_head = i;
}

static void enforce_budget(struct symtab *st, uint32_t keep)
{
	while (st->code_bytes + htab_bytes(&st->code_index) > st->budget && st->lru_tail != NONE &&
	       st->lru_tail != keep) {
		release(st, st->lru_tail);
		st->stats.evictions++;
	}
}

static int64_t handle_of(const struct symtab *st, uint32_t i)
{
	return (int64_t)((uint64_t)(st->codes[i].gen & 0x7fffffff) << 32 | i);
}

/* The live entry behind a handle, or NULL (evicted since, or never valid). */
static const struct code *entry_of(const struct symtab *st, int64_t handle)
{
	uint32_t i = (uint32_t)handle;
	const struct code *c;

	if (handle < 0 || i >= st->ncodes)
		return NULL;
	c = &st->codes[i];
	return c->live && (c->gen & 0x7fffffff) == (uint32_t)(handle >> 32) ? c : NULL;
}

/* Build and insert the entry for (t, addr, tag) from `parts`. Returns its handle or a
 * negative errno: -EFAULT/-ESRCH unreadable, -EINVAL not a code object, -ESTALE another
 * object now at that address. */
static int64_t build(struct symtab *st, const struct symtab_target *t, uint64_t addr, uint32_t tag,
		     const struct code_parts *parts)
{
	const struct py_objlayout *lay = t->lay;
	uint8_t head_buf[PY_CODE_HDR_MAX];
	const uint8_t *head = parts->head;
	char *name = NULL, *file = NULL;
	uint8_t *linetable = NULL;
	uint32_t linetable_len = 0, i, mine;
	int32_t firstlineno;
	int64_t func;
	struct code *c;
	bool is_shim;
	int err;

	if (lay->co_read_size > sizeof(head_buf))
		return -EINVAL;
	if (!head || parts->head_len < lay->co_read_size) {
		err = proc_read_mem(t->pid, addr, head_buf, lay->co_read_size);
		if (err)
			return err;
		head = head_buf;
	}
	if (t->code_type && load_ptr(head, lay->ob_type) != t->code_type)
		return -EINVAL; /* freed and reused memory, or not a code object at all */
	if (symtab_layout_has_tag(lay)) {
		err = tag_of(t, head, parts->name, parts->name_len, &mine);
		if (err)
			return err;
		if (mine != tag)
			return -ESTALE; /* another code object took the sampled one's address */
	}
	memcpy(&firstlineno, head + lay->co_firstlineno, 4);
	name = parts->name ? str_from_image(lay, parts->name, parts->name_len, t->pid,
					    load_ptr(head, lay->co_qualname))
			   : read_str(t->pid, lay, load_ptr(head, lay->co_qualname));
	file = parts->file ? str_from_image(lay, parts->file, parts->file_len, t->pid,
					    load_ptr(head, lay->co_filename))
			   : read_str(t->pid, lay, load_ptr(head, lay->co_filename));
	if (!name || !file) {
		err = -EFAULT;
		goto fail;
	}
	if (parts->linetable && parts->linetable_cut)
		linetable = rest_of_table(t, head, parts, &linetable_len);
	if (linetable) {
		/* the copy was cut at the record's bound, and the object is still there */
	} else if (parts->linetable) {
		linetable_len = parts->linetable_len > SYMTAB_MAX_LINETABLE
					? SYMTAB_MAX_LINETABLE
					: (uint32_t)parts->linetable_len;
		linetable = malloc(linetable_len ? linetable_len : 1);
		if (!linetable) {
			err = -ENOMEM;
			goto fail;
		}
		memcpy(linetable, parts->linetable, linetable_len);
	} else {
		err = read_bytes(t->pid, lay, load_ptr(head, lay->co_linetable), &linetable,
				 &linetable_len, NULL);
		if (err)
			goto fail;
	}
	/* 3.13+ `__init__` shim (_Py_InitCleanup): name and file are both "__init__" */
	is_shim = !strcmp(name, "__init__") && !strcmp(file, "__init__");
	func = intern_func(st, name, file, firstlineno, FRAME_PYTHON);
	name = file = NULL;
	if (func < 0) {
		err = (int)func;
		goto fail;
	}
	if (st->free_head != NONE) {
		i = st->free_head;
		st->free_head = st->codes[i].lru_next;
	} else {
		err = grow_array((void **)&st->codes, &st->codes_cap, st->ncodes + 1,
				 sizeof(*st->codes));
		if (err)
			goto fail;
		i = (uint32_t)st->ncodes++;
		st->codes[i].gen = 0;
	}
	err = htab_insert(&st->code_index, code_hash(t->id, addr, tag), i);
	if (err) {
		st->codes[i].lru_next = st->free_head;
		st->free_head = i;
		goto fail;
	}
	c = &st->codes[i];
	*c = (struct code){ .addr = addr,
			    .target = t->id,
			    .tag = tag,
			    .gen = c->gen,
			    .func = (uint32_t)func,
			    .firstlineno = firstlineno,
			    .linetable = linetable,
			    .linetable_len = linetable_len,
			    .lt_format = (uint8_t)lay->lt_format,
			    .is_shim = is_shim,
			    .live = true };
	lru_push_front(st, i);
	st->code_bytes += entry_bytes(c);
	st->nlive++;
	enforce_budget(st, i);
	return handle_of(st, i);
fail:
	free(name);
	free(file);
	free(linetable);
	return err;
}

struct code_key {
	uint64_t addr;
	uint32_t target, tag;
};

static bool code_eq(uint32_t id, const void *key, void *ctx)
{
	const struct symtab *st = ctx;
	const struct code_key *k = key;
	const struct code *c = &st->codes[id];

	return c->addr == k->addr && c->target == k->target && c->tag == k->tag;
}

static bool lookup(struct symtab *st, uint32_t target, uint64_t addr, uint32_t tag, uint32_t *i)
{
	struct code_key k = { .addr = addr, .target = target, .tag = tag };

	if (!htab_find(&st->code_index, code_hash(target, addr, tag), code_eq, &k, st, i))
		return false;
	if (*i != st->lru_head) {
		lru_unlink(st, *i);
		lru_push_front(st, *i);
	}
	return true;
}

int64_t symtab__resolve(struct symtab *st, const struct symtab_target *t, uint64_t code,
			uint32_t tag)
{
	static const struct code_parts from_memory;
	uint32_t i;
	int64_t h;

	if (lookup(st, t->id, code, tag, &i))
		return handle_of(st, i);
	h = build(st, t, code, tag, &from_memory);
	if (h >= 0)
		st->stats.from_memory++;
	return h;
}

int symtab__add_record(struct symtab *st, const struct symtab_target *t, const void *data,
		       size_t size)
{
	const struct pw_code_hdr *h = data;
	const uint8_t *p = (const uint8_t *)(h + 1);
	struct code_parts parts = { 0 };
	uint32_t i;
	int64_t r;

	if (size < sizeof(*h) ||
	    size < sizeof(*h) + (size_t)h->head_len + h->name_len + h->file_len + h->lt_len) {
		st->stats.bad_records++;
		return -EINVAL;
	}
	if (lookup(st, t->id, h->code, h->tag, &i))
		return 0; /* another CPU shipped it too */
	parts.head = p;
	parts.head_len = h->head_len;
	p += h->head_len;
	if (!(h->flags & PW_CODEF_NO_NAME)) {
		parts.name = p;
		parts.name_len = h->name_len;
	}
	p += h->name_len;
	if (!(h->flags & PW_CODEF_NO_FILE)) {
		parts.file = p;
		parts.file_len = h->file_len;
	}
	p += h->file_len;
	if (!(h->flags & PW_CODEF_NO_LINETABLE)) {
		parts.linetable = p;
		parts.linetable_len = h->lt_len;
		parts.linetable_cut = h->lt_size > h->lt_len;
		parts.linetable_size = h->lt_size;
	}
	r = build(st, t, h->code, h->tag, &parts);
	if (r == -ENOMEM)
		return -ENOMEM;
	if (r < 0) {
		/* the sample's own lookup reads the target and counts what fails */
		st->stats.bad_records++;
		return (int)r;
	}
	st->stats.from_records++;
	return 0;
}

bool symtab__is_shim(const struct symtab *st, int64_t sym)
{
	const struct code *c = entry_of(st, sym);

	return c && c->is_shim;
}

uint32_t symtab__func(const struct symtab *st, int64_t sym)
{
	const struct code *c = entry_of(st, sym);

	return c ? c->func : SYMTAB_NO_FUNC;
}

int symtab__line(const struct symtab *st, int64_t sym, uint32_t instr)
{
	const struct code *c = entry_of(st, sym);
	int line = 0;

	if (!c)
		return 0;
	if (instr == PW_INSTR_NONE)
		return c->firstlineno;
	if (linetable_line_for((enum linetable_format)c->lt_format, c->linetable, c->linetable_len,
			       c->firstlineno, instr, &line))
		return 0;
	/* instructions without a location (3.11+ prologues such as a coroutine's
	 * RETURN_GENERATOR/POP_TOP) belong to the function's header line */
	return line > 0 ? line : c->firstlineno;
}

static const struct func *func_at(const struct symtab *st, uint32_t func)
{
	const struct func *f = func < intern_count(&st->funcs) ? intern_at(&st->funcs, func) : NULL;

	return f && f->name ? f : NULL;
}

const char *symtab__func_name(const struct symtab *st, uint32_t func)
{
	const struct func *f = func_at(st, func);

	return f ? f->name : "?";
}

const char *symtab__func_file(const struct symtab *st, uint32_t func)
{
	const struct func *f = func_at(st, func);

	return f ? strtab__get(st->files, f->file) : "?";
}

int symtab__func_firstline(const struct symtab *st, uint32_t func)
{
	const struct func *f = func_at(st, func);

	return f ? f->firstline : 0;
}

static int64_t labelled_func(struct symtab *st, enum frame_kind kind, const char *name,
			     const char *file)
{
	char *n = strdup(name), *f = strdup(file);

	if (!n || !f) {
		free(n);
		free(f);
		return -ENOMEM;
	}
	return intern_func(st, n, f, 0, kind);
}

int64_t symtab__pseudo_func(struct symtab *st, const char *name)
{
	return labelled_func(st, FRAME_PSEUDO, name, "");
}

int64_t symtab__machine_func(struct symtab *st, enum frame_kind kind, const char *name,
			     const char *file)
{
	return labelled_func(st, kind, name, file);
}

enum frame_kind symtab__func_kind(const struct symtab *st, uint32_t func)
{
	const struct func *f = func_at(st, func);

	return f ? f->kind : FRAME_PYTHON;
}

int64_t symtab__mapping(struct symtab *st, const struct symtab_mapping *m)
{
	struct symtab_mapping copy = *m;
	uint64_t hash;
	int64_t id;

	if (copy.build_id_len > SYMTAB_BUILD_ID_MAX)
		copy.build_id_len = SYMTAB_BUILD_ID_MAX;
	if (!copy.path)
		copy.path = "";
	hash = map_hash(&copy);
	id = intern_find(&st->maps, hash, &copy);
	if (id >= 0)
		return id;
	copy.path = strdup(copy.path);
	if (!copy.path)
		return -ENOMEM;
	id = intern_add(&st->maps, hash, &copy);
	if (id < 0)
		free((char *)copy.path);
	else {
		st->func_bytes += strlen(copy.path) + 1;
		st->nmaps_live++;
	}
	return id;
}

const struct symtab_mapping *symtab__mapping_at(const struct symtab *st, uint32_t id)
{
	const struct symtab_mapping *m =
		id && id < intern_count(&st->maps) ? intern_at(&st->maps, id) : NULL;

	return m && m->path ? m : NULL;
}

size_t symtab__nmappings(const struct symtab *st)
{
	return intern_count(&st->maps);
}

size_t symtab__nfuncs(const struct symtab *st)
{
	return intern_count(&st->funcs);
}

void symtab__forget_target(struct symtab *st, uint32_t target)
{
	for (size_t i = 0; i < st->ncodes; i++)
		if (st->codes[i].live && st->codes[i].target == target)
			release(st, (uint32_t)i);
}

static size_t names_bytes(const struct symtab *st)
{
	size_t n = st->func_bytes + intern_bytes(&st->funcs) + intern_bytes(&st->maps);

	for (size_t i = 0; i < strtab__count(st->files); i++) {
		const char *f = strtab__get(st->files, i);

		n += (f ? strlen(f) + 1 : 0) + sizeof(char *);
	}
	return n;
}

const struct symtab_stats *symtab__stats(const struct symtab *st)
{
	struct symtab_stats *s = (struct symtab_stats *)&st->stats;

	s->bytes = st->code_bytes + htab_bytes(&st->code_index);
	s->budget = st->budget;
	s->func_bytes = names_bytes(st);
	s->entries = st->nlive;
	return s;
}

/* ---- collection of the names ---------------------------------------------------------- */

struct symtab_gc {
	size_t nfuncs, nmaps;
	uint8_t *func_kept, *map_kept; /* by id */
};

/* What the names held need, without the room their tables keep (the highest count's, not
 * a measure of what is held now). */
static size_t held_bytes(const struct symtab *st)
{
	size_t n = st->func_bytes + st->nmaps_live * sizeof(struct symtab_mapping);

	for (size_t i = 0; i < strtab__count(st->files); i++) {
		const char *f = strtab__get(st->files, i);

		n += f ? strlen(f) + 1 : 0;
	}
	return n;
}

bool symtab__names_due(const struct symtab *st)
{
	size_t n = held_bytes(st);

	return n > st->budget / SYMTAB_NAMES_SHARE && n > 2 * st->names_kept;
}

struct symtab_gc *symtab__gc_begin(const struct symtab *st)
{
	struct symtab_gc *gc = calloc(1, sizeof(*gc));

	if (!gc)
		return NULL;
	gc->nfuncs = intern_count(&st->funcs);
	gc->nmaps = intern_count(&st->maps);
	gc->func_kept = calloc(gc->nfuncs ? gc->nfuncs : 1, 1);
	gc->map_kept = calloc(gc->nmaps ? gc->nmaps : 1, 1);
	if (!gc->func_kept || !gc->map_kept) {
		free(gc->func_kept);
		free(gc->map_kept);
		free(gc);
		return NULL;
	}
	return gc;
}

void symtab__gc_keep(struct symtab_gc *gc, uint32_t func, uint32_t map)
{
	if (func < gc->nfuncs)
		gc->func_kept[func] = 1;
	if (map < gc->nmaps)
		gc->map_kept[map] = 1;
}

/* Free the functions not kept, then the files no function kept names. */
static int sweep_funcs(struct symtab *st, const uint8_t *kept)
{
	size_t nfiles = strtab__count(st->files);
	uint8_t *file_kept = calloc(nfiles ? nfiles : 1, 1);
	int err = 0;

	if (!file_kept)
		return -ENOMEM;
	for (size_t i = 0; i < intern_count(&st->funcs); i++) {
		struct func *f = intern_at(&st->funcs, i);
		struct func_key k = { f->name, f->file, f->kind };

		if (!f->name)
			continue;
		if (!err && !kept[i]) {
			err = intern_remove(&st->funcs, func_hash(&k), (uint32_t)i);
			if (!err) {
				st->func_bytes -= strlen(f->name) + 1 + sizeof(struct func);
				free(f->name);
				f->name = NULL;
				st->stats.names_collected++;
				continue;
			}
		}
		file_kept[f->file] = 1;
	}
	for (size_t i = 0; i < nfiles && !err; i++)
		if (!file_kept[i] && strtab__get(st->files, i)) {
			err = strtab__remove(st->files, i);
			st->stats.names_collected += !err;
		}
	free(file_kept);
	return err;
}

static int sweep_maps(struct symtab *st, const uint8_t *kept)
{
	for (size_t i = 1; i < intern_count(&st->maps); i++) {
		struct symtab_mapping *m = intern_at(&st->maps, i);
		int err;

		if (!m->path || kept[i])
			continue;
		err = intern_remove(&st->maps, map_hash(m), (uint32_t)i);
		if (err)
			return err;
		st->func_bytes -= strlen(m->path) + 1;
		st->nmaps_live--;
		free((char *)m->path);
		m->path = NULL;
		st->stats.names_collected++;
	}
	return 0;
}

void symtab__gc_end(struct symtab *st, struct symtab_gc *gc)
{
	/* what a handle's accessors give when stale, and what a Python frame's mapping is */
	gc->func_kept[SYMTAB_NO_FUNC] = 1;
	gc->map_kept[0] = 1;
	for (size_t i = 0; i < st->ncodes; i++)
		if (st->codes[i].live)
			symtab__gc_keep(gc, st->codes[i].func, 0);
	/* out of memory part way: what is left stays until the next collection */
	if (!sweep_funcs(st, gc->func_kept))
		sweep_maps(st, gc->map_kept);
	st->names_kept = held_bytes(st);
	free(gc->func_kept);
	free(gc->map_kept);
	free(gc);
}
