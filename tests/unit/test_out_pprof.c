// SPDX-License-Identifier: MIT
/* Unit tests for user/output/pbenc.c and user/output/out_pprof.c: wire-format bytes, the decoded profile
 * (gunzip + a small protobuf reader here), and `go tool pprof -raw/-top` reading a profile
 * with hostile names (skipped when Go is not installed: apt-get install golang-go). */
#include "test_out_fixture.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <zlib.h>
#include <cmocka.h>

#include "output/pbenc.h"

static void expect_bytes(const struct strbuf *sb, const char *want, size_t len)
{
	assert_int_equal(sb->len, len);
	assert_memory_equal(sb->buf, want, len);
}

static void test_pb_varints(void **state)
{
	struct strbuf sb = { 0 };

	(void)state;
	assert_int_equal(pb_varint(&sb, 0), 0);
	assert_int_equal(pb_varint(&sb, 1), 0);
	assert_int_equal(pb_varint(&sb, 127), 0);
	assert_int_equal(pb_varint(&sb, 128), 0);
	assert_int_equal(pb_varint(&sb, 300), 0);
	expect_bytes(&sb, "\x00\x01\x7f\x80\x01\xac\x02", 7);
	strbuf_reset(&sb);
	/* an int64 -1 goes out as its two's complement: ten bytes */
	assert_int_equal(pb_varint(&sb, UINT64_MAX), 0);
	expect_bytes(&sb, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
	strbuf_free(&sb);
}

static void test_pb_fields(void **state)
{
	struct strbuf sb = { 0 };
	uint64_t packed[] = { 1, 300 };

	(void)state;
	assert_int_equal(pb_uint(&sb, 1, 0), 0); /* proto3 default: left out */
	assert_int_equal(sb.len, 0);
	assert_int_equal(pb_uint(&sb, 2, 150), 0);
	assert_int_equal(pb_bytes(&sb, 6, "", 0), 0); /* an empty string is kept */
	assert_int_equal(pb_bytes(&sb, 6, "hi", 2), 0);
	assert_int_equal(pb_packed(&sb, 1, packed, 2), 0);
	assert_int_equal(pb_packed(&sb, 1, packed, 0), 0);
	expect_bytes(&sb,
		     "\x10\x96\x01"
		     "\x32\x00"
		     "\x32\x02hi"
		     "\x0a\x03\x01\xac\x02",
		     14);
	strbuf_free(&sb);
}

/* A failure is kept: later fields write nothing and return it, a message with an error is
 * not nested into another but passes its error on, and a reset forgets it. */
static void test_pb_first_error_kept(void **state)
{
	struct strbuf sb = { 0 }, msg = { 0 };

	(void)state;
	assert_int_equal(pb_uint(&sb, 2, 150), 0);
	assert_int_equal(strbuf_fail(&sb, -ENOMEM), -ENOMEM);
	assert_int_equal(strbuf_fail(&sb, -EINVAL), -ENOMEM); /* the first one stays */
	assert_int_equal(pb_uint(&sb, 2, 150), -ENOMEM);
	assert_int_equal(pb_bytes(&sb, 6, "hi", 2), -ENOMEM);
	assert_int_equal(pb_packed(&sb, 1, (uint64_t[]){ 1 }, 1), -ENOMEM);
	assert_int_equal(pb_uint(&sb, 1, 0), -ENOMEM); /* even a field left out says so */
	assert_int_equal(strbuf_addf(&sb, "%d", 1), -ENOMEM);
	expect_bytes(&sb, "\x10\x96\x01", 3);

	strbuf_reset(&sb);
	assert_int_equal(sb.err, 0);
	assert_int_equal(pb_uint(&msg, 1, 7), 0);
	strbuf_fail(&msg, -E2BIG);
	assert_int_equal(pb_msg(&sb, 3, &msg), -E2BIG);
	assert_int_equal(sb.len, 0);
	strbuf_free(&sb);
	strbuf_free(&msg);
}

/* --- a reader for what the writer produced ---------------------------------------- */

struct pbr {
	const uint8_t *p, *end;
};

static uint64_t pbr_varint(struct pbr *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		assert_true(r->p < r->end);
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return v;
	}
	fail_msg("varint too long");
	return 0;
}

/* Next field: its number; a varint in *v, or a length-delimited slice in *sub. */
static uint32_t pbr_next(struct pbr *r, uint64_t *v, struct pbr *sub)
{
	uint64_t key = pbr_varint(r);

	if ((key & 7) == PB_VARINT) {
		*v = pbr_varint(r);
	} else {
		assert_int_equal(key & 7, PB_LEN);
		*v = pbr_varint(r);
		assert_true(*v <= (uint64_t)(r->end - r->p));
		*sub = (struct pbr){ r->p, r->p + *v };
		r->p += *v;
	}
	return (uint32_t)(key >> 3);
}

/* Values of a packed repeated field (or a single unpacked one). */
static size_t pbr_ints(uint64_t v, struct pbr *sub, bool was_len, uint64_t *out, size_t max)
{
	size_t n = 0;

	if (!was_len) {
		out[0] = v;
		return 1;
	}
	while (sub->p < sub->end && n < max)
		out[n++] = pbr_varint(sub);
	return n;
}

struct decoded {
	const char *strings[64];
	size_t nstrings;
	uint64_t sample_types[4][2], period_type[2], period, duration, time, dflt;
	size_t nsample_types;
	struct {
		uint64_t locs[8], values[2], label_keys[8], label_strs[8], label_nums[8];
		size_t nlocs, nvalues, nlabels;
	} samples[8];
	size_t nsamples;
	uint64_t locations[8][3]; /* id, function id, line */
	size_t nlocations;
	uint64_t functions[8][5]; /* id, name, system name, file, start line */
	size_t nfunctions;
	uint8_t *raw;
};

static void decode(const char *gz, size_t len, struct decoded *d)
{
	z_stream zs = { 0 };
	size_t cap = 1 << 20;
	struct pbr r, sub = { 0 }, s2 = { 0 }, s3 = { 0 };
	uint64_t v;
	uint32_t field;

	memset(d, 0, sizeof(*d));
	d->raw = malloc(cap);
	assert_non_null(d->raw);
	assert_true(len > 2 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b); /* gzip magic */
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (uint8_t *)gz;
	zs.avail_in = (unsigned int)len;
	zs.next_out = d->raw;
	zs.avail_out = (unsigned int)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	r = (struct pbr){ d->raw, d->raw + zs.total_out };
	inflateEnd(&zs);
	while (r.p < r.end) {
		const uint8_t *before = r.p;

		field = pbr_next(&r, &v, &sub);
		bool is_len = (*before & 7) == PB_LEN;

		switch (field) {
		case 1: /* sample_type */
		case 11: /* period_type */ {
			uint64_t *vt =
				field == 1 ? d->sample_types[d->nsample_types++] : d->period_type;

			while (sub.p < sub.end) {
				uint32_t f = pbr_next(&sub, &v, &s2);

				vt[f - 1] = v;
			}
			break;
		}
		case 2: { /* sample */
			typeof(d->samples[0]) *s = &d->samples[d->nsamples++];

			while (sub.p < sub.end) {
				const uint8_t *b = sub.p;
				uint32_t f = pbr_next(&sub, &v, &s2);
				bool len2 = (*b & 7) == PB_LEN;

				if (f == 1) {
					s->nlocs += pbr_ints(v, &s2, len2, s->locs + s->nlocs,
							     8 - s->nlocs);
				} else if (f == 2) {
					s->nvalues += pbr_ints(v, &s2, len2, s->values, 2);
				} else if (f == 3) {
					size_t l = s->nlabels < 8 ? s->nlabels++ : 7;

					while (s2.p < s2.end) {
						uint32_t lf = pbr_next(&s2, &v, &s3);

						if (lf == 1)
							s->label_keys[l] = v;
						else if (lf == 2)
							s->label_strs[l] = v;
						else if (lf == 3)
							s->label_nums[l] = v;
					}
				}
			}
			break;
		}
		case 4: { /* location: id, line { function_id, line } */
			uint64_t *loc = d->locations[d->nlocations++];

			while (sub.p < sub.end) {
				uint32_t f = pbr_next(&sub, &v, &s2);

				if (f == 1)
					loc[0] = v;
				while (f == 4 && s2.p < s2.end) {
					uint32_t lf = pbr_next(&s2, &v, &s3);

					loc[lf] = v;
				}
			}
			break;
		}
		case 5: { /* function */
			uint64_t *fn = d->functions[d->nfunctions++];

			while (sub.p < sub.end) {
				uint32_t f = pbr_next(&sub, &v, &s2);

				fn[f - 1] = v;
			}
			break;
		}
		case 6: /* string_table: copy out, NUL-terminated */ {
			char *s = calloc(1, sub.end - sub.p + 1);

			memcpy(s, sub.p, sub.end - sub.p);
			d->strings[d->nstrings++] = s;
			break;
		}
		case 9:
			d->time = v;
			break;
		case 10:
			d->duration = v;
			break;
		case 12:
			d->period = v;
			break;
		case 14:
			d->dflt = v;
			break;
		default:
			(void)is_len;
			break;
		}
	}
}

static void decoded_free(struct decoded *d)
{
	for (size_t i = 0; i < d->nstrings; i++)
		free((char *)d->strings[i]);
	free(d->raw);
}

static const char *str(const struct decoded *d, uint64_t i)
{
	assert_true(i < d->nstrings);
	return d->strings[i];
}

static void test_pprof_decodes_to_the_profile(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), b = fx_code(fx, "work", "/app.py", 20);
	struct decoded d;
	char sys[64];
	size_t len;
	char *out;

	(void)state;
	fx_sample(fx, 101, (uint64_t[]){ a, b }, 2, 3);
	fx_sample(fx, 101, (uint64_t[]){ a }, 1, 1);
	out = fx_write(fx, out_pprof_write, &len);
	assert_non_null(out);
	decode(out, len, &d);

	assert_string_equal(str(&d, 0), "");
	assert_int_equal(d.nsample_types, 2);
	assert_string_equal(str(&d, d.sample_types[0][0]), "samples");
	assert_string_equal(str(&d, d.sample_types[0][1]), "count");
	assert_string_equal(str(&d, d.sample_types[1][0]), "cpu");
	assert_string_equal(str(&d, d.sample_types[1][1]), "nanoseconds");
	assert_string_equal(str(&d, d.period_type[0]), "cpu");
	assert_string_equal(str(&d, d.period_type[1]), "nanoseconds");
	assert_string_equal(str(&d, d.dflt), "cpu");
	assert_int_equal(d.period, 10101010); /* 1e9 / 99 Hz */
	assert_int_equal(d.duration, 2000000000);
	assert_int_equal(d.time, 1700000000000000000ull);

	assert_int_equal(d.nsamples, 2);
	/* main>work: leaf first; locations are agg frame ids + 1 (main 1, work 2) */
	assert_int_equal(d.samples[0].nlocs, 2);
	assert_int_equal(d.samples[0].locs[0], 2);
	assert_int_equal(d.samples[0].locs[1], 1);
	assert_int_equal(d.samples[0].values[0], 3);
	assert_int_equal(d.samples[0].values[1], 3 * 10101010);
	assert_int_equal(d.samples[1].nlocs, 1);
	assert_int_equal(d.samples[1].values[0], 1);
	assert_int_equal(d.samples[0].nlabels, 4);
	assert_string_equal(str(&d, d.samples[0].label_keys[0]), "pid");
	assert_int_equal(d.samples[0].label_nums[0], getpid());
	assert_string_equal(str(&d, d.samples[0].label_keys[1]), "tid");
	assert_int_equal(d.samples[0].label_nums[1], 101);
	assert_string_equal(str(&d, d.samples[0].label_keys[2]), "thread_name");
	assert_string_equal(str(&d, d.samples[0].label_strs[2]), "?");
	assert_string_equal(str(&d, d.samples[0].label_keys[3]), "os_thread_name");
	assert_string_equal(str(&d, d.samples[0].label_strs[3]), "?");

	assert_int_equal(d.nlocations, 2);
	assert_int_equal(d.locations[1][0], 2);	 /* id */
	assert_int_equal(d.locations[1][2], 20); /* line */
	assert_int_equal(d.nfunctions, 2);
	for (size_t i = 0; i < 2; i++) {
		const uint64_t *fn = d.functions[i];
		const char *name = i ? "work" : "main";

		assert_int_equal(fn[0], d.locations[i][1]);
		assert_string_equal(str(&d, fn[1]), name);
		snprintf(sys, sizeof(sys), "/app.py:%s", name);
		assert_string_equal(str(&d, fn[2]), sys);
		assert_string_equal(str(&d, fn[3]), "/app.py");
		assert_int_equal(fn[4], i ? 20 : 10);
	}
	decoded_free(&d);
	free(out);
	fx_free(fx);
}

static void test_pprof_strings_are_valid_utf8(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct decoded d;
	size_t len;
	char *out;

	(void)state;
	/* a thread name is raw bytes from /proc: malformed UTF-8 becomes U+FFFD */
	assert_int_equal(prctl(PR_SET_NAME, "bad\xff\xfe", 0, 0, 0), 0);
	fx_sample(fx, 0, (uint64_t[]){ fx_code(fx, "f", "/a.py", 1) }, 1, 1);
	out = fx_write(fx, out_pprof_write, &len);
	prctl(PR_SET_NAME, "test_out_pprof", 0, 0, 0);
	assert_non_null(out);
	decode(out, len, &d);
	assert_string_equal(str(&d, d.samples[0].label_strs[2]), "bad\xef\xbf\xbd\xef\xbf\xbd");
	decoded_free(&d);
	free(out);
	fx_free(fx);
}

/* out_pprof_write_opts into memory. */
static char *write_opts(const struct fx *fx, const struct out_pprof_opts *o, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(out_pprof_write_opts(f, fx->p, o), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The agent writes each process of a window from the list of its own stacks: the bytes are
 * those the process filter alone writes (the same Locations, Mappings and Functions in the
 * same order), and nothing of another process gets in. */
static void test_pprof_of_listed_stacks_is_the_process_filter(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_process = true }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), b = fx_code(fx, "work", "/app.py", 20),
		 c = fx_code(fx, "other", "/b.py", 5), d2 = fx_code(fx, "deep", "/b.py", 7);
	struct target t2 = fx->t;
	const struct agg *agg;
	uint32_t mine[16];
	size_t nmine, len1, len2;
	struct decoded d;
	char *out1, *out2;

	(void)state;
	t2.id = 2;
	snprintf(t2.comm, sizeof(t2.comm), "second");
	assert_int_equal(profile__add_target(fx->p, &t2), 0);
	/* the two processes' stacks interleaved in the agg, sharing code objects */
	fx_sample(fx, 101, (uint64_t[]){ a, b }, 2, 3);
	fx->t.id = 2;
	fx_sample(fx, 202, (uint64_t[]){ c, d2 }, 2, 5);
	fx->t.id = 1;
	fx_sample(fx, 101, (uint64_t[]){ a }, 1, 1);
	fx->t.id = 2;
	fx_sample(fx, 202, (uint64_t[]){ a, c }, 2, 2);
	fx->t.id = 1;
	agg = profile__agg(fx->p);
	for (uint32_t proc = 0; proc < 2; proc++) {
		nmine = 0;
		for (size_t i = 0; i < agg__nstacks(agg); i++)
			if (agg__stack(agg, i)->proc == proc)
				mine[nmine++] = (uint32_t)i;
		assert_int_equal(nmine, 2);
		out1 = write_opts(fx, &(struct out_pprof_opts){ .proc = proc, .fleet = true },
				  &len1);
		out2 = write_opts(
			fx,
			&(struct out_pprof_opts){
				.proc = proc, .fleet = true, .stacks = mine, .nstacks = nmine },
			&len2);
		assert_int_equal(len1, len2);
		assert_memory_equal(out1, out2, len1);
		decode(out2, len2, &d);
		assert_int_equal(d.nsamples, 2);
		/* process 0: main, work; process 1: other, deep, and main under its own stack */
		assert_int_equal(d.nfunctions, proc ? 3 : 2);
		for (size_t i = 0; i < d.nfunctions; i++)
			assert_string_not_equal(str(&d, d.functions[i][1]),
						proc ? "work" : "other");
		decoded_free(&d);
		free(out1);
		free(out2);
	}
	fx_free(fx);
}

/* --- go tool pprof ------------------------------------------------------------------ */

static void test_pprof_go_tool_reads_hostile_names(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	size_t n = sizeof(fx_hostile) / sizeof(fx_hostile[0]);
	char path[] = "/tmp/pywalk-test-XXXXXX.pb.gz", cmd[256];
	uint64_t root = fx_code(fx, "<module>", "/srv/app.py", 1);
	char *raw, *top;

	(void)state;
	if (!fx_have_go())
		skip();
	for (size_t i = 0; i < n; i++)
		fx_sample(fx, 0, (uint64_t[]){ root, fx_code(fx, fx_hostile[i], fx_hostile[i], 7) },
			  2, i ? 1 : 10);
	fx_write_file(fx, out_pprof_write, path, 6);

	snprintf(cmd, sizeof(cmd), "go tool pprof -raw %s 2>&1", path);
	raw = fx_command_output(cmd);
	assert_non_null(strstr(raw, "PeriodType: cpu nanoseconds\n"));
	assert_non_null(strstr(raw, "Period: 10101010\n"));
	assert_non_null(strstr(raw, "Duration: 2s\n"));
	assert_non_null(strstr(raw, "samples/count cpu/nanoseconds[dflt]\n"));
	assert_non_null(strstr(raw, "        10  101010100: "));
	assert_non_null(strstr(raw, "pid:[") && strstr(raw, "thread_name:["));
	/* pprof prints names as they are: each hostile one is there verbatim, and pprof did
	 * not "demangle" <...> out of them (the system name differs from the name) */
	for (size_t i = 0; i < n; i++)
		assert_non_null(strstr(raw, fx_hostile[i]));
	assert_non_null(strstr(raw, "<module> /srv/app.py:1 s=1"));

	snprintf(cmd, sizeof(cmd), "go tool pprof -top -sample_index=samples %s 2>&1", path);
	top = fx_command_output(cmd);
	/* 10 + 8 samples; the heaviest leaf is the first hostile name */
	assert_non_null(strstr(top, "Showing nodes accounting for 18, 100% of 18 total"));
	assert_non_null(strstr(top, "        10 55.56% 55.56%         10 55.56%  semi;colon\n"));
	unlink(path);
	free(raw);
	free(top);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pb_varints),
		cmocka_unit_test(test_pb_fields),
		cmocka_unit_test(test_pb_first_error_kept),
		cmocka_unit_test(test_pprof_decodes_to_the_profile),
		cmocka_unit_test(test_pprof_strings_are_valid_utf8),
		cmocka_unit_test(test_pprof_of_listed_stacks_is_the_process_filter),
		cmocka_unit_test(test_pprof_go_tool_reads_hostile_names),
	};

	return cmocka_run_group_tests_name("out_pprof", tests, NULL, NULL);
}
