// SPDX-License-Identifier: MIT
/* Unit tests for user/profile/kagg.c over a real profile (test_out_fixture.h): a key's drained
 * count goes to the stack its first record made, with the weight summed; the same key in
 * the other generation may name another stack; a first record the profile could not count
 * sends the key's hits to the same "not counted" reason; a generation drained forgets its
 * keys. */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "profile/kagg.h"

struct kfx {
	struct fx *fx;
	struct kagg *k;
};

static struct kfx kfx_new(void)
{
	struct kagg *k = kagg__new();
	struct kfx kf = { .k = k,
			  .fx = fx_new(&(struct profile_opts){ .on_stack = kagg__on_stack,
							       .on_stack_ctx = k },
				       "proc") };

	assert_non_null(k);
	return kf;
}

static void kfx_free(struct kfx *kf)
{
	fx_free(kf->fx);
	kagg__free(kf->k);
}

static int count(void *ctx, const void *data, size_t size)
{
	return profile__add_record(ctx, data, size);
}

/* A first record of (gen, stack hash) for codes[0..n) (root first) in thread tid, of
 * target `target` (the fixture's is 1). */
static void first(struct kfx *kf, uint32_t gen, uint64_t stack, uint32_t target, uint32_t tid,
		  const uint64_t *codes, uint32_t n, uint64_t weight)
{
	size_t size = sizeof(struct pw_agg_first) + sizeof(struct pw_sample_hdr) +
		      n * sizeof(struct pw_frame);
	struct pw_agg_first *f = calloc(1, size);
	struct pw_sample_hdr *h = (struct pw_sample_hdr *)(f + 1);
	struct pw_frame *frames = (struct pw_frame *)(h + 1);

	*f = (struct pw_agg_first){ .kind = PW_REC_AGG_FIRST, .gen = gen, .stack = stack };
	*h = (struct pw_sample_hdr){ .kind = PW_REC_SAMPLE,
				     .nframes = n,
				     .target = target,
				     .pid = (uint32_t)getpid(),
				     .tid = tid,
				     .probe = 1,
				     .weight = weight };
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *co = (const uint8_t *)(uintptr_t)codes[n - 1 - i];
		__u64 words[PW_CODE_TAG_WORDS] = { 0 };

		memcpy(words, co + FX_TAG_OFF, FX_TAG_SIZE);
		frames[i] = (struct pw_frame){ .code = codes[n - 1 - i],
					       .instr = PW_INSTR_NONE,
					       .tag = pw_code_tag(words, FX_TAG_MASK, NULL) };
	}
	assert_int_equal(kagg__first(kf->k, kf->fx->p, f, size, count, kf->fx->p), 0);
	free(f);
}

static void credit(struct kfx *kf, uint32_t gen, uint64_t stack, uint32_t target, uint32_t tid,
		   uint32_t n, uint64_t hits, uint64_t weight)
{
	struct pw_agg_key key = {
		.stack = stack, .nframes = n, .target = target, .tid = tid, .probe = 1
	};
	struct pw_agg_val val = { .hits = hits, .weight = weight, .defined = 1 };

	assert_int_equal(kagg__credit(kf->k, kf->fx->p, gen, &key, &val), 0);
}

/* The count of the profile's stack whose leaf is named `leaf`, or 0. */
static uint64_t count_of(const struct kfx *kf, const char *leaf)
{
	const struct agg *agg = profile__agg(kf->fx->p);
	const struct symtab *st = profile__symtab(kf->fx->p);
	uint64_t n = 0;

	for (size_t i = 0; i < agg__nstacks(agg); i++) {
		const struct agg_stack *s = agg__stack(agg, i);
		const uint32_t *ids = agg__stack_frames(agg, s);
		const struct agg_frame *fr = agg__frame(agg, ids[s->nframes - 1]);

		if (!strcmp(symtab__func_name(st, fr->func), leaf))
			n += s->count;
	}
	return n;
}

static void test_drained_count_goes_to_the_first_records_stack(void **state)
{
	struct kfx kf = kfx_new();
	uint64_t a = fx_code(kf.fx, "main", "/app.py", 1), b = fx_code(kf.fx, "work", "/app.py", 2);
	uint32_t tid = (uint32_t)gettid();

	(void)state;
	first(&kf, 0, 0x1234, 1, tid, (uint64_t[]){ a, b }, 2, 7);
	assert_int_equal(count_of(&kf, "work"), 7); /* the first hit counts itself */
	/* --latency: the weight summed in the kernel, not the hits */
	credit(&kf, 0, 0x1234, 1, tid, 2, 3, 300);
	assert_int_equal(count_of(&kf, "work"), 307);
	assert_int_equal(profile__dropped(kf.fx->p), 0);
	assert_int_equal(kagg__stats(kf.k)->keys, 1);
	assert_int_equal(kagg__stats(kf.k)->drained, 1);
	kfx_free(&kf);
}

static void test_generations_keep_their_own_keys(void **state)
{
	struct kfx kf = kfx_new();
	uint64_t a = fx_code(kf.fx, "main", "/app.py", 1), b = fx_code(kf.fx, "work", "/app.py", 2);
	uint64_t c = fx_code(kf.fx, "other", "/app.py", 3);
	uint32_t tid = (uint32_t)gettid();

	(void)state;
	/* one hash, two stacks in two generations (the kernel's compare keeps each in its
	 * own); generation 1's first record arrives before generation 0 is drained */
	first(&kf, 0, 0x55, 1, tid, (uint64_t[]){ a, b }, 2, 1);
	first(&kf, 1, 0x55, 1, tid, (uint64_t[]){ a, c }, 2, 1);
	credit(&kf, 0, 0x55, 1, tid, 2, 10, 10);
	kagg__end_gen(kf.k, 0);
	credit(&kf, 1, 0x55, 1, tid, 2, 20, 20);
	assert_int_equal(count_of(&kf, "work"), 11);
	assert_int_equal(count_of(&kf, "other"), 21);
	/* a second first record of a key (two CPUs) is counted, the first names it */
	first(&kf, 1, 0x55, 1, tid, (uint64_t[]){ a, c }, 2, 1);
	assert_int_equal(count_of(&kf, "other"), 22);
	assert_int_equal(kagg__stats(kf.k)->keys, 2);
	kfx_free(&kf);
}

static void test_uncounted_first_record_sends_its_hits_to_the_same_reason(void **state)
{
	struct kfx kf = kfx_new();
	uint64_t a = fx_code(kf.fx, "main", "/app.py", 1);
	uint32_t tid = (uint32_t)gettid();

	(void)state;
	/* a target the profile does not track: its first record is not counted */
	first(&kf, 0, 0x99, 77, tid, (uint64_t[]){ a }, 1, 1);
	assert_int_equal(profile__drops(kf.fx->p)->n[PROFILE_DROP_UNTRACKED], 1);
	credit(&kf, 0, 0x99, 77, tid, 1, 41, 41);
	assert_int_equal(profile__drops(kf.fx->p)->n[PROFILE_DROP_UNTRACKED], 42);
	assert_int_equal(profile__dropped(kf.fx->p), 42);
	assert_int_equal(agg__total(profile__agg(kf.fx->p)), 0);
	/* a key with no first record at all (cannot happen): counted, as malformed */
	credit(&kf, 0, 0x77, 1, tid, 1, 5, 5);
	assert_int_equal(profile__drops(kf.fx->p)->n[PROFILE_DROP_MALFORMED], 5);
	assert_int_equal(kagg__stats(kf.k)->unattributed, 5);
	/* drained: the generation's keys are forgotten */
	kagg__end_gen(kf.k, 0);
	credit(&kf, 0, 0x99, 77, tid, 1, 1, 1);
	assert_int_equal(profile__drops(kf.fx->p)->n[PROFILE_DROP_MALFORMED], 6);
	kfx_free(&kf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drained_count_goes_to_the_first_records_stack),
		cmocka_unit_test(test_generations_keep_their_own_keys),
		cmocka_unit_test(test_uncounted_first_record_sends_its_hits_to_the_same_reason),
	};

	return cmocka_run_group_tests_name("kagg", tests, NULL, NULL);
}
