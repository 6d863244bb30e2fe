/* SPDX-License-Identifier: MIT */
/* Shared by the writer tests: builds a real `struct profile` without BPF or a target.
 * Fake CPython code and str objects are laid out in this process's own memory under a
 * made-up object layout, and ring-buffer records pointing at them go through
 * profile__add_record, so names travel the same path as in a recording: process_vm_readv
 * of our own pid, str decoding to UTF-8, interning. Also a small JSON syntax checker. */
#ifndef PW_TEST_OUT_FIXTURE_H
#define PW_TEST_OUT_FIXTURE_H

#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "abi.h"
#include "tag.h"
#include "lib/escape.h"
#include "output/out.h"
#include "profile/profile.h"

#define FX_API static __attribute__((unused))

/* The made-up object layout: offsets in our fake objects. */
enum {
	FX_CO_FILENAME = 16,
	FX_CO_NAME = 24,
	FX_CO_QUALNAME = 32,
	FX_CO_LINETABLE = 40,
	FX_CO_FIRSTLINENO = 48,
	FX_CO_SIZE = 56,
	FX_STR_LENGTH = 16,
	FX_STR_STATE = 32,
	FX_STR_ASCII_DATA = 40,
	FX_STR_COMPACT_DATA = 56,
	FX_BYTES_SIZE = 16,
	FX_BYTES_DATA = 32,
	FX_MAX_ALLOCS = 1 << 16,
	/* the code tag: qualname and linetable pointers, as real layouts include */
	FX_TAG_OFF = FX_CO_QUALNAME,
	FX_TAG_MASK = 0x3,
	FX_TAG_SIZE = 16,
};

struct fx {
	struct profile *p;
	struct target t;
	void *allocs[FX_MAX_ALLOCS];
	size_t nallocs;
	uint64_t empty_bytes; /* shared empty line table */
	uint64_t time_ns;     /* the samples' time (bpf_ktime_get_ns) */
};

FX_API void *fx_alloc(struct fx *fx, size_t size)
{
	void *m = calloc(1, size);

	if (!m || fx->nallocs >= FX_MAX_ALLOCS)
		abort();
	fx->allocs[fx->nallocs++] = m;
	return m;
}

/* A compact str holding the UTF-8 string s, as UCS-4 (or ASCII when it is). */
FX_API uint64_t fx_str(struct fx *fx, const char *s)
{
	size_t n = strlen(s), len = 0, i = 0;
	uint32_t *cps = calloc(n + 1, sizeof(*cps)), state;
	bool ascii = true;
	uint8_t *o;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;
		int extra = c < 0x80 ? 0 : c < 0xe0 ? 1 : c < 0xf0 ? 2 : 3;

		cp = extra ? c & (0x3f >> extra) : c;
		for (int k = 1; k <= extra; k++)
			cp = cp << 6 | ((unsigned char)s[i + k] & 0x3f);
		i += extra + 1;
		ascii &= cp < 0x80;
		cps[len++] = cp;
	}
	o = fx_alloc(fx, FX_STR_COMPACT_DATA + (len + 1) * 4);
	memcpy(o + FX_STR_LENGTH, &(uint64_t){ len }, 8);
	state = 1u << 5 | (ascii ? 1u << 6 | 1u << 2 : 4u << 2); /* compact, kind, ascii */
	memcpy(o + FX_STR_STATE, &state, 4);
	for (i = 0; i < len; i++) {
		if (ascii)
			o[FX_STR_ASCII_DATA + i] = (uint8_t)cps[i];
		else
			memcpy(o + FX_STR_COMPACT_DATA + 4 * i, &cps[i], 4);
	}
	free(cps);
	return (uint64_t)(uintptr_t)o;
}

/* A code object whose frames (at PW_INSTR_NONE) resolve to (qualname, file, line). */
FX_API uint64_t fx_code(struct fx *fx, const char *qualname, const char *file, int line)
{
	uint8_t *co = fx_alloc(fx, FX_CO_SIZE);
	uint64_t name = fx_str(fx, qualname), fname = fx_str(fx, file);
	int32_t first = line;

	memcpy(co + FX_CO_QUALNAME, &name, 8);
	memcpy(co + FX_CO_NAME, &name, 8);
	memcpy(co + FX_CO_FILENAME, &fname, 8);
	memcpy(co + FX_CO_LINETABLE, &fx->empty_bytes, 8);
	memcpy(co + FX_CO_FIRSTLINENO, &first, 4);
	return (uint64_t)(uintptr_t)co;
}

FX_API struct fx *fx_new(const struct profile_opts *opts, const char *process_name)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		abort();
	fx->p = profile__new(opts);
	fx->t.pid = getpid();
	fx->t.id = 1;
	snprintf(fx->t.comm, sizeof(fx->t.comm), "%s", process_name);
	fx->t.ver.obj = (struct py_objlayout){
		.co_filename = FX_CO_FILENAME,
		.co_name = FX_CO_NAME,
		.co_qualname = FX_CO_QUALNAME,
		.co_linetable = FX_CO_LINETABLE,
		.co_firstlineno = FX_CO_FIRSTLINENO,
		.co_read_size = FX_CO_SIZE,
		.str_length = FX_STR_LENGTH,
		.str_state = FX_STR_STATE,
		.str_ascii_data = FX_STR_ASCII_DATA,
		.str_compact_data = FX_STR_COMPACT_DATA,
		.bytes_size = FX_BYTES_SIZE,
		.bytes_data = FX_BYTES_DATA,
		.str_kind_shift = 2,
		.ob_type = 8,
		.lt_format = LINETABLE_LOCATION,
		.tag_off = FX_TAG_OFF,
		.tag_mask = FX_TAG_MASK,
		.tag_size = FX_TAG_SIZE,
		.tag_name_word = 0xff,
	};
	fx->empty_bytes = (uint64_t)(uintptr_t)fx_alloc(fx, FX_BYTES_DATA + 8);
	if (!fx->p || profile__add_target(fx->p, &fx->t))
		abort();
	/* 99 Hz, a 2 s recording at a fixed time: 10101010 ns per sample */
	profile__set_sampling(fx->p, 99, 1700000000000000000ull, 1700000002000000000ull);
	return fx;
}

/* A sample record (malloc'ed, *size bytes) of trace's probe `probe` (0: the sampler)
 * weighing `weight` (0: one), of the stack codes[0..n) (root first) in thread `tid` (0:
 * ours), at fx->time_ns, with the tags the BPF walker would read. */
FX_API struct pw_sample_hdr *fx_record(struct fx *fx, uint32_t probe, uint64_t weight, uint32_t tid,
				       const uint64_t *codes, uint32_t n, size_t *size)
{
	struct pw_sample_hdr *h;
	struct pw_frame *frames;

	*size = sizeof(struct pw_sample_hdr) + n * sizeof(struct pw_frame);
	h = calloc(1, *size);
	if (!h)
		abort();
	frames = (struct pw_frame *)(h + 1);
	h->kind = PW_REC_SAMPLE;
	h->probe = (uint16_t)probe;
	h->weight = weight;
	h->target = fx->t.id;
	h->pid = (uint32_t)getpid();
	h->tid = tid ? tid : (uint32_t)gettid();
	h->nframes = n;
	h->time_ns = fx->time_ns;
	for (uint32_t i = 0; i < n; i++) { /* records are leaf first */
		const uint8_t *co = (const uint8_t *)(uintptr_t)codes[n - 1 - i];
		__u64 words[PW_CODE_TAG_WORDS] = { 0 };

		/* the tag the BPF walker reads at sample time */
		memcpy(words, co + FX_TAG_OFF, FX_TAG_SIZE);
		frames[i] = (struct pw_frame){ .code = codes[n - 1 - i],
					       .instr = PW_INSTR_NONE,
					       .tag = pw_code_tag(words, FX_TAG_MASK, NULL) };
	}
	return h;
}

/* Count `count` hits of trace's probe `probe` (0: samples of the sampler), each weighing
 * `weight` (0: one), of the stack codes[0..n) (root first) in thread `tid` (0: ours). */
FX_API void fx_hit(struct fx *fx, uint32_t probe, uint64_t weight, uint32_t tid,
		   const uint64_t *codes, uint32_t n, uint64_t count)
{
	size_t size;
	struct pw_sample_hdr *h = fx_record(fx, probe, weight, tid, codes, n, &size);

	for (uint64_t c = 0; c < count; c++)
		if (profile__add_record(fx->p, h, size))
			abort();
	free(h);
}

/* Count `count` samples of the stack codes[0..n) (root first) in thread `tid` (0: ours). */
FX_API void fx_sample(struct fx *fx, uint32_t tid, const uint64_t *codes, uint32_t n,
		      uint64_t count)
{
	fx_hit(fx, 0, 0, tid, codes, n, count);
}

FX_API void fx_free(struct fx *fx)
{
	profile__free(fx->p);
	for (size_t i = 0; i < fx->nallocs; i++)
		free(fx->allocs[i]);
	free(fx);
}

/* Run a writer into memory; returns the malloc'ed output (NUL-terminated), sets *len. */
FX_API char *fx_write(const struct fx *fx, int (*write)(FILE *, const struct profile *),
		      size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	int err;

	*len = 0;
	if (!f)
		abort();
	err = write(f, fx->p);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}

/* The standard output of shell command `cmd` (malloc'ed); it must exit 0. For the tests
 * that hand a writer's output to another tool (go tool pprof). */
FX_API char *fx_command_output(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *buf = NULL, chunk[4096];
	size_t size = 0, n;
	FILE *m = open_memstream(&buf, &size);

	if (!p || !m)
		abort();
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(m);
	if (pclose(p))
		abort();
	return buf;
}

static int write_all_or_abort(int fd, const char *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/* Is `go` there to run `go tool pprof`? Says why not (the caller skips). */
FX_API bool fx_have_go(void)
{
	if (!system("command -v go >/dev/null 2>&1"))
		return true;
	printf("SKIP: go not installed (apt-get install golang-go)\n");
	return false;
}

/* Run a writer into a new file at `path` (a mkstemps template ending in a suffix of
 * `suffix_len` characters), for a tool to read. */
FX_API void fx_write_file(const struct fx *fx, int (*write)(FILE *, const struct profile *),
			  char *path, int suffix_len)
{
	size_t len;
	char *out = fx_write(fx, write, &len);
	int fd = mkstemps(path, suffix_len);

	if (!out || fd < 0 || write_all_or_abort(fd, out, len))
		abort();
	close(fd);
	free(out);
}

/* Names no writer may let escape its syntax (what a hostile target can choose). */
static const char *const fx_hostile[] __attribute__((unused)) = {
	"semi;colon", "new\nline\r\ttab", "quote\"apos'back\\slash", "<b>&amp;</b>",
	"</script><script>window.__pwned=1</script>", "<!-- comment",
	/* "üïcödé 函数 🔥" */
	"\xc3\xbcn\xc3\xaf"
	"c\xc3\xb6"
	"d\xc3\xa9 \xe5\x87\xbd\xe6\x95\xb0 \xf0\x9f\x94\xa5",
	"ctl\x01\x1f\x7f end",
	"line\xe2\x80\xa8sep\xe2\x80\xa9para", /* U+2028/U+2029 end JavaScript lines */
};

/* --- a JSON syntax checker (RFC 8259), strict about strings: no raw control characters,
 * only the defined escapes, valid UTF-8 ---------------------------------------------- */

struct fx_json {
	const char *p, *end;
	int depth;
};

FX_API bool fx_json_value(struct fx_json *j);

FX_API void fx_json_ws(struct fx_json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

FX_API bool fx_json_string(struct fx_json *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	for (j->p++; j->p < j->end;) {
		unsigned char c = (unsigned char)*j->p;

		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (j->p + 1 >= j->end)
				return false;
			c = (unsigned char)j->p[1];
			if (c == 'u') {
				if (j->p + 6 > j->end)
					return false;
				for (int k = 2; k < 6; k++)
					if (!strchr("0123456789abcdefABCDEF", j->p[k]) || !j->p[k])
						return false;
				j->p += 6;
			} else if (c && strchr("\"\\/bfnrt", c)) {
				j->p += 2;
			} else {
				return false;
			}
			continue;
		}
		if (c < 0x80) {
			j->p++;
			continue;
		}
		/* UTF-8: lead byte, then 1-3 continuation bytes */
		int extra = (c & 0xe0) == 0xc0	 ? 1
			    : (c & 0xf0) == 0xe0 ? 2
			    : (c & 0xf8) == 0xf0 ? 3
						 : -1;

		if (extra < 0 || c == 0xc0 || c == 0xc1 || j->p + extra >= j->end)
			return false;
		for (int k = 1; k <= extra; k++)
			if (((unsigned char)j->p[k] & 0xc0) != 0x80)
				return false;
		j->p += extra + 1;
	}
	return false;
}

FX_API bool fx_json_number(struct fx_json *j)
{
	const char *start = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	while (j->p < j->end && ((*j->p >= '0' && *j->p <= '9') || strchr(".eE+-", *j->p)))
		j->p++;
	return j->p > start;
}

FX_API bool fx_json_value(struct fx_json *j)
{
	bool ok = true;
	char close;

	fx_json_ws(j);
	if (j->p >= j->end || ++j->depth > 64)
		return false;
	if (*j->p == '{' || *j->p == '[') {
		close = *j->p == '{' ? '}' : ']';
		j->p++;
		fx_json_ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
		} else {
			for (;;) {
				if (close == '}') {
					fx_json_ws(j);
					if (!fx_json_string(j))
						return false;
					fx_json_ws(j);
					if (j->p >= j->end || *j->p++ != ':')
						return false;
				}
				if (!fx_json_value(j))
					return false;
				fx_json_ws(j);
				if (j->p >= j->end)
					return false;
				if (*j->p == ',') {
					j->p++;
					continue;
				}
				if (*j->p++ != close)
					return false;
				break;
			}
		}
	} else if (*j->p == '"') {
		ok = fx_json_string(j);
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
		j->p += 4;
	} else if (!strncmp(j->p, "false", 5)) {
		j->p += 5;
	} else {
		ok = fx_json_number(j);
	}
	j->depth--;
	return ok;
}

/* true if s[0..len) is exactly one JSON value, whitespace around it allowed */
FX_API bool fx_json_valid(const char *s, size_t len)
{
	struct fx_json j = { .p = s, .end = s + len };

	if (!fx_json_value(&j))
		return false;
	fx_json_ws(&j);
	return j.p == j.end;
}

#endif
