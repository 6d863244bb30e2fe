// SPDX-License-Identifier: MIT
/* What a profile holds when every sample brings a code object it has not seen (a target
 * that makes code objects all the time): the names, lines and stacks stay the same, so
 * all that may grow is what the profile caches, and that is bounded by the symbol budget.
 * Measured as heap bytes in use (mallinfo2), before and after. */
#define _GNU_SOURCE
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_out_fixture.h"

#define NCODES 200000
#define BUDGET (1u << 20)

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* One sample of the code object at `co` (one frame, leaf and root). */
static void sample(struct fx *fx, const uint8_t *co)
{
	struct {
		struct pw_sample_hdr h;
		struct pw_frame f;
	} r = { 0 };
	__u64 words[PW_CODE_TAG_WORDS] = { 0 };

	memcpy(words, co + FX_TAG_OFF, FX_TAG_SIZE);
	r.h.kind = PW_REC_SAMPLE;
	r.h.target = fx->t.id;
	r.h.pid = (uint32_t)getpid();
	r.h.tid = (uint32_t)gettid();
	r.h.nframes = 1;
	r.f = (struct pw_frame){ .code = (uint64_t)(uintptr_t)co, .instr = 3,
				 .tag = pw_code_tag(words, FX_TAG_MASK, NULL) };
	assert_int_equal(profile__add_record(fx->p, &r, sizeof(r)), 0);
}

static void test_new_code_objects_all_the_time_keep_the_profile_in_budget(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .symtab_bytes = BUDGET }, "proc");
	uint8_t *codes = calloc(NCODES, FX_CO_SIZE);
	uint64_t proto = fx_code(fx, "f", "a.py", 1);
	size_t before = 0, after;

	(void)state;
	assert_non_null(codes);
	/* copies of one function at NCODES addresses: same name, file and line */
	for (size_t i = 0; i < NCODES; i++)
		memcpy(codes + i * FX_CO_SIZE, (const void *)(uintptr_t)proto, FX_CO_SIZE);
	for (size_t i = 0; i < NCODES; i++) {
		if (i == NCODES / 10)
			before = heap_in_use(); /* the budget is full by now */
		sample(fx, codes + i * FX_CO_SIZE);
	}
	after = heap_in_use();
	assert_int_equal(agg__total(profile__agg(fx->p)), NCODES);
	assert_int_equal(agg__nstacks(profile__agg(fx->p)), 1);
	assert_true(profile__symtab_stats(fx->p)->bytes <= BUDGET);
	print_message("heap in use: %zu -> %zu bytes over %d new code objects\n", before, after,
		      NCODES - NCODES / 10);
	/* the budget, and an eighth of it for the frame cache, never more */
	assert_true(after < before + BUDGET / 8 + (64 << 10));
	free(codes);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_code_objects_all_the_time_keep_the_profile_in_budget),
	};

	return cmocka_run_group_tests_name("profile_memory", tests, NULL, NULL);
}
