// SPDX-License-Identifier: MIT
/* Python thread names from target memory (pythreads.h). Dicts are scanned entry by entry
 * (a str's hash is seeded per process, so a lookup by hash is not open to us); the keys
 * every Thread shares are recognized by address after their first read. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/proc.h"
#include "pystate/pythreads.h"
#include "symbolize/symtab.h"
#include "inspect/target.h"

/* PyObject / PyTypeObject, the same from 3.10 to 3.15 (x86-64) in the default build; a
 * free-threaded build's object header is 16 bytes longer, and every field below that
 * lies after it moves by that much (H(r)). */
#define OB_TYPE 8
#define TP_BASICSIZE 32
#define TP_FLAGS 168
#define TP_DICTOFFSET 288
#define H(r) ((r)->src->ob_type - OB_TYPE)
#define TPF_INLINE_VALUES (1ull << 2) /* 3.13+ */
#define TPF_MANAGED_DICT (1ull << 4)  /* 3.11+ */
#define TPF_LONG (1ull << 24)
#define TPF_UNICODE (1ull << 28)
#define TPF_DICT (1ull << 29)
/* PyModuleObject.md_dict; PyDictObject.ma_keys, ma_values */
#define MD_DICT 16
#define MA_KEYS 32
#define MA_VALUES 40

/* Bounds on what one read may walk: a dict's entries, reads in all. */
#define MAX_ENTRIES 65536
#define ENTRY_CHUNK 128

/* The attribute and key names looked for; a dict key's address is remembered with which
 * of them it is (or none), since Thread instances share one keys object. */
enum wanted { W_THREADING, W_ACTIVE, W_NAME, W_NATIVE_ID, W__COUNT, W_NONE = W__COUNT };
static const char *const wanted_names[W__COUNT] = { "threading", "_active", "_name", "_native_id" };
#define MEMO_SIZE 256

struct reader {
	struct pythreads_src *src;
	unsigned long reads, max_reads;
	bool cut; /* a read was refused for max_reads: what was found is not all there is */
	struct {
		uint64_t addr;
		uint8_t which;
	} memo[MEMO_SIZE];
	struct {
		uint64_t addr, flags, basicsize, cached_keys;
		int64_t dictoffset;
	} types[8];
	unsigned int ntypes;
};

static int rd(struct reader *r, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -EFAULT;
	if (r->reads == r->max_reads) {
		r->cut = true;
		return -E2BIG;
	}
	r->reads++;
	return r->src->read(r->src->ctx, addr, buf, len) ? -EFAULT : 0;
}

static int rd64(struct reader *r, uint64_t addr, uint64_t *v)
{
	return rd(r, addr, v, sizeof(*v));
}

/* The type of `obj` and what is used of it (remembered: objects share few types). */
static int type_of(struct reader *r, uint64_t obj, unsigned int *slot)
{
	uint64_t type;
	uint8_t img[TP_DICTOFFSET + 16 + 8];
	unsigned int i, h = H(r);
	int err = rd64(r, obj + OB_TYPE + h, &type);

	if (err)
		return err;
	for (i = 0; i < r->ntypes; i++)
		if (r->types[i].addr == type) {
			*slot = i;
			return 0;
		}
	err = rd(r, type, img, TP_DICTOFFSET + h + 8);
	if (err)
		return err;
	i = r->ntypes < 8 ? r->ntypes++ : (unsigned int)(type >> 4) % 8;
	r->types[i].addr = type;
	memcpy(&r->types[i].basicsize, img + TP_BASICSIZE + h, 8);
	memcpy(&r->types[i].flags, img + TP_FLAGS + h, 8);
	memcpy(&r->types[i].dictoffset, img + TP_DICTOFFSET + h, 8);
	r->types[i].cached_keys = 0;
	if (r->src->mod.ht_cached_keys)
		rd64(r, type + r->src->mod.ht_cached_keys, &r->types[i].cached_keys);
	*slot = i;
	return 0;
}

static bool has_flag(struct reader *r, uint64_t obj, uint64_t flag)
{
	unsigned int t;

	return !type_of(r, obj, &t) && (r->types[t].flags & flag);
}

/* A compact str's characters: kind (1, 2, 4), length and where they start. */
static int str_header(struct reader *r, uint64_t obj, unsigned int *kind, uint64_t *length,
		      uint64_t *data)
{
	const struct pythreads_src *s = r->src;
	uint32_t state;
	int err;

	if (!has_flag(r, obj, TPF_UNICODE))
		return -EPROTO;
	err = rd64(r, obj + s->str_length, length);
	if (!err)
		err = rd(r, obj + s->str_state, &state, sizeof(state));
	if (err)
		return err;
	*kind = (state >> s->str_kind_shift) & 7;
	if (!((state >> (s->str_kind_shift + 3)) & 1) || (*kind != 1 && *kind != 2 && *kind != 4))
		return -EPROTO; /* not compact, or not a str */
	*data = obj + (((state >> (s->str_kind_shift + 4)) & 1) ? s->str_ascii_data
								: s->str_compact_data);
	return 0;
}

/* Which wanted name the key at `key` is (W_NONE: none, or not a str). */
static enum wanted key_is(struct reader *r, uint64_t key)
{
	unsigned int m = (unsigned int)(key >> 4) % MEMO_SIZE, kind;
	uint64_t length, data;
	enum wanted w = W_NONE;
	char text[16];

	if (r->memo[m].addr == key)
		return (enum wanted)r->memo[m].which;
	if (!str_header(r, key, &kind, &length, &data) && kind == 1 && length < sizeof(text) &&
	    !rd(r, data, text, length)) {
		text[length] = 0;
		for (unsigned int i = 0; i < W__COUNT; i++)
			if (strlen(wanted_names[i]) == length &&
			    !memcmp(text, wanted_names[i], length))
				w = (enum wanted)i;
	}
	r->memo[m].addr = key;
	r->memo[m].which = (uint8_t)w;
	return w;
}

/* Where a keys object's entries are, how many, and the layout of one. */
struct keys_view {
	uint64_t entries, n;
	unsigned int size, key_off, value_off;
};

static int keys_view(struct reader *r, uint64_t keys, struct keys_view *kv)
{
	uint8_t h[48];
	int err = rd(r, keys, h, sizeof(h));

	if (err)
		return err;
	if (r->src->minor == 10) {
		/* dk_size @8, dk_nentries @32, dk_indices @40 sized by dk_size; entries of
		 * (hash, key, value) */
		uint64_t size, ix;

		memcpy(&size, h + 8, 8);
		memcpy(&kv->n, h + 32, 8);
		if (size < 8 || size > (1u << 30) || (size & (size - 1)))
			return -EPROTO;
		ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		kv->entries = keys + 40 + size * ix;
		kv->size = 24;
		kv->key_off = 8;
		kv->value_off = 16;
		return kv->n > size ? -EPROTO : 0;
	}
	/* 3.11+: dk_log2_size @8, dk_log2_index_bytes @9, dk_kind @10, dk_nentries @24,
	 * dk_indices @32; general entries (kind 0) (hash, key, value), unicode ones (key,
	 * value) */
	if (h[8] > 30 || h[9] > 33 || h[10] > 2)
		return -EPROTO;
	memcpy(&kv->n, h + 24, 8);
	if (kv->n > (1ull << h[8]))
		return -EPROTO;
	kv->entries = keys + 32 + (1ull << h[9]);
	kv->size = h[10] ? 16 : 24;
	kv->key_off = h[10] ? 0 : 8;
	kv->value_off = kv->key_off + 8;
	return 0;
}

/* Call `each` for every entry of a keys object, the value from `values` (an array indexed
 * like the entries: split tables and inline values) when not 0. Stops when each returns
 * nonzero, which is returned. */
typedef int (*entry_fn)(struct reader *r, uint64_t key, uint64_t value, void *arg);

static int for_each_entry(struct reader *r, uint64_t keys, uint64_t values, entry_fn each,
			  void *arg)
{
	uint8_t buf[ENTRY_CHUNK * 24];
	struct keys_view kv;
	int err = keys_view(r, keys, &kv);

	if (err)
		return err;
	if (kv.n > MAX_ENTRIES)
		return -E2BIG;
	for (uint64_t i = 0; i < kv.n; i += ENTRY_CHUNK) {
		uint64_t n = kv.n - i < ENTRY_CHUNK ? kv.n - i : ENTRY_CHUNK;

		err = rd(r, kv.entries + i * kv.size, buf, n * kv.size);
		if (err)
			return err;
		for (uint64_t j = 0; j < n; j++) {
			uint64_t key, value;

			memcpy(&key, buf + j * kv.size + kv.key_off, 8);
			memcpy(&value, buf + j * kv.size + kv.value_off, 8);
			if (!key)
				continue; /* deleted */
			if (values && rd64(r, values + (i + j) * 8, &value))
				continue;
			if (!value)
				continue;
			err = each(r, key, value, arg);
			if (err)
				return err;
		}
	}
	return 0;
}

struct find {
	enum wanted want;
	uint64_t value;
};

static int find_one(struct reader *r, uint64_t key, uint64_t value, void *arg)
{
	struct find *f = arg;

	if (key_is(r, key) != f->want)
		return 0;
	f->value = value;
	return 1;
}

/* The value of key `want` in a keys object (values as in for_each_entry; 0: absent). */
static int find_in(struct reader *r, uint64_t keys, uint64_t values, enum wanted want,
		   uint64_t *value)
{
	struct find f = { want, 0 };
	int err = for_each_entry(r, keys, values, find_one, &f);

	*value = f.value;
	return err < 0 ? err : 0;
}

/* The value of key `want` in the dict object `dict` (0: absent). */
static int dict_get(struct reader *r, uint64_t dict, enum wanted want, uint64_t *value)
{
	uint64_t kv[2];
	int err;

	if (!has_flag(r, dict, TPF_DICT))
		return -EPROTO;
	err = rd(r, dict + MA_KEYS + H(r), kv, sizeof(kv));
	if (err)
		return err;
	/* a split table's values: 3.13+ PyDictValues has 8 bytes of header before them */
	if (kv[1] && r->src->minor >= 13)
		kv[1] += 8;
	return find_in(r, kv[0], kv[1], want, value);
}

/* The value of instance attribute `want` of `obj` (0: absent), wherever the version keeps
 * it: 3.10 a __dict__ at tp_dictoffset; 3.11 values at obj-32 (the type's shared keys) or
 * a dict at obj-24; 3.12 obj-24 holds values (tagged: odd) or a dict; 3.13+ inline values
 * after the object (valid byte set) or a dict at obj-24. */
static int attr_get(struct reader *r, uint64_t obj, enum wanted want, uint64_t *value)
{
	unsigned int minor = r->src->minor, t;
	uint64_t flags, ptr = 0, keys;
	int err = type_of(r, obj, &t);

	*value = 0;
	if (err)
		return err;
	flags = r->types[t].flags;
	keys = r->types[t].cached_keys;
	if (minor == 10) {
		int64_t off = r->types[t].dictoffset;

		if (off <= 0 || off > 4096)
			return -EPROTO;
		err = rd64(r, obj + (uint64_t)off, &ptr);
		return err ? err : ptr ? dict_get(r, ptr, want, value) : 0;
	}
	if (minor >= 13 && (flags & TPF_INLINE_VALUES)) {
		uint8_t head[4];
		uint64_t basic = r->types[t].basicsize;

		if (basic > 4096)
			return -EPROTO;
		err = rd(r, obj + basic, head, sizeof(head));
		if (err)
			return err;
		if (head[3] && keys) /* valid: the values are inline */
			return find_in(r, keys, obj + basic + 8, want, value);
	}
	if (!(flags & TPF_MANAGED_DICT))
		return -EPROTO;
	if (minor == 11) {
		err = rd64(r, obj - 32, &ptr);
		if (err)
			return err;
		if (ptr && keys)
			return find_in(r, keys, ptr, want, value);
	}
	/* the managed dict pointer: a free-threaded build has no GC links before it */
	err = rd64(r, obj - (H(r) ? 8 : 24), &ptr);
	if (err)
		return err;
	if (minor == 12 && (ptr & 1))
		return keys ? find_in(r, keys, ptr + 1, want, value) : -EPROTO;
	return ptr ? dict_get(r, ptr, want, value) : 0;
}

/* A small non-negative int (a tid). */
static int long_get(struct reader *r, uint64_t obj, uint32_t *v)
{
	uint64_t size;
	uint32_t digit = 0;
	int err;

	if (!has_flag(r, obj, TPF_LONG))
		return -EPROTO;
	err = rd64(r, obj + 16 + H(r), &size);
	if (err)
		return err;
	if (r->src->minor >= 12) { /* lv_tag: digits << 3 | sign (0 positive, 1 zero) */
		if ((size & 3) == 1) {
			*v = 0;
			return 0;
		}
		if ((size & 3) != 0)
			return -EPROTO;
		size >>= 3;
	}
	if (size == 0) {
		*v = 0;
		return 0;
	}
	if (size != 1) /* a tid fits one 30-bit digit */
		return -EPROTO;
	err = rd(r, obj + 24 + H(r), &digit, sizeof(digit));
	*v = digit;
	return err;
}

static int str_get(struct reader *r, uint64_t obj, char *out, size_t size)
{
	uint8_t data[PYTHREADS_NAME_CHARS * 4];
	unsigned int kind;
	uint64_t length, addr, n;
	char *s;
	int err = str_header(r, obj, &kind, &length, &addr);

	if (err)
		return err;
	n = length < PYTHREADS_NAME_CHARS ? length : PYTHREADS_NAME_CHARS;
	err = rd(r, addr, data, n * kind);
	if (err && n)
		return err;
	s = symtab_decode_str(data, n, kind, length > n);
	if (!s)
		return -ENOMEM;
	if (strlen(s) >= size) { /* cannot be: 4 bytes a character and the mark */
		free(s);
		return -EPROTO;
	}
	strcpy(out, s);
	free(s);
	return 0;
}

/* The threading module's _active dict, through sys.modules of each interpreter. */
static int find_active(struct reader *r, uint64_t *active)
{
	const struct pythreads_src *s = r->src;
	uint64_t interp;
	int err = rd64(r, s->runtime_addr + s->runtime_interp_head, &interp), last = -ENOENT;

	for (unsigned int i = 0; !err && interp && i < 8; i++) {
		uint64_t modules, module, dict;

		err = rd64(r, interp + s->mod.interp_modules, &modules);
		if (!err && modules)
			err = dict_get(r, modules, W_THREADING, &module);
		if (!err && modules && module && !rd64(r, module + MD_DICT + H(r), &dict) && dict &&
		    !dict_get(r, dict, W_ACTIVE, active) && *active)
			return 0;
		if (err)
			last = err;
		err = rd64(r, interp + s->interp_next, &interp);
	}
	return err ? err : last;
}

struct collect {
	struct pythread_name *out;
	size_t cap;
	struct pythreads_result *res;
};

static int collect_one(struct reader *r, uint64_t key, uint64_t thread, void *arg)
{
	struct collect *c = arg;
	struct pythread_name *n = &c->out[c->res->named];
	uint64_t name = 0, native = 0;

	(void)key; /* the ident; the native id says which OS thread it is */
	if (c->res->nthreads++ >= PYTHREADS_MAX)
		return 1;
	if (c->res->named >= c->cap)
		return 0;
	if (attr_get(r, thread, W_NAME, &name) || !name ||
	    attr_get(r, thread, W_NATIVE_ID, &native) || !native ||
	    long_get(r, native, &n->native_id) || !n->native_id ||
	    str_get(r, name, n->name, sizeof(n->name))) {
		c->res->unreadable++;
		return 0;
	}
	c->res->named++;
	return 0;
}

int pythreads_read(struct pythreads_src *src, struct pythread_name *out, size_t cap,
		   struct pythreads_result *res)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct collect c = { out, cap, res };
	int err = 0;

	memset(res, 0, sizeof(*res));
	if (!r)
		return -ENOMEM;
	r->src = src;
	r->max_reads = src->max_reads && src->max_reads < PYTHREADS_MAX_READS ? src->max_reads
									      : PYTHREADS_MAX_READS;
	if (!src->mod.interp_modules || src->minor < 10 || src->minor > 15 ||
	    (src->ob_type != OB_TYPE && src->ob_type != OB_TYPE + 16)) {
		free(r);
		return -ENOTSUP;
	}
	/* the dict found last time, if it still is one */
	if (!src->active_dict || !has_flag(r, src->active_dict, TPF_DICT)) {
		src->active_dict = 0;
		err = find_active(r, &src->active_dict);
	}
	if (!err) {
		uint64_t kv[2];

		err = rd(r, src->active_dict + MA_KEYS + H(r), kv, sizeof(kv));
		if (!err && kv[1]) /* _active is never a split table */
			err = -EPROTO;
		if (!err)
			err = for_each_entry(r, kv[0], 0, collect_one, &c);
		if (err > 0)
			err = 0;
	}
	if (err)
		src->active_dict = 0;
	res->reads = r->reads;
	res->cut = r->cut;
	free(r);
	return err;
}

static int read_proc(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return proc_read_mem((pid_t)(intptr_t)ctx, addr, buf, len);
}

void pythreads_src_of(const struct target *t, struct pythreads_src *src)
{
	*src = (struct pythreads_src){ .read = read_proc,
				       .ctx = (void *)(intptr_t)t->pid,
				       .minor = t->ver.minor,
				       .runtime_addr = t->ver.cfg.runtime_addr,
				       .runtime_interp_head = t->ver.cfg.off.runtime_interp_head,
				       .interp_next = t->ver.cfg.off.interp_next,
				       .mod = t->ver.mod,
				       .str_length = t->ver.obj.str_length,
				       .str_state = t->ver.obj.str_state,
				       .str_ascii_data = t->ver.obj.str_ascii_data,
				       .str_compact_data = t->ver.obj.str_compact_data,
				       .str_kind_shift = t->ver.obj.str_kind_shift,
				       .ob_type = t->ver.obj.ob_type };
}
