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
	r.f = (struct pw_frame){ .code = (uint64_t)(uintptr_t)co,
				 .instr = 3,
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

#define RING 512
#define WINDOWS 60

/* Rewrite the digits of a str made by fx_str from a name ending in 8 digits. */
static void renumber(uint64_t str, unsigned int n)
{
	uint8_t *o = (uint8_t *)(uintptr_t)str;
	uint64_t len;
	char digits[9];

	memcpy(&len, o + FX_STR_LENGTH, 8);
	snprintf(digits, sizeof(digits), "%08u", n % 100000000u);
	memcpy(o + FX_STR_ASCII_DATA + len - 8, digits, 8);
}

/* The folded line of a one-frame stack of function `i` (fx process "proc"). */
static bool folded_has(const struct profile *p, unsigned int i)
{
	struct fx view = { .p = (struct profile *)p };
	char want[64], *out;
	size_t len;
	bool found;

	snprintf(want, sizeof(want), "f_%08u (/t/%08u:1) ", i, i);
	out = fx_write(&view, out_folded_write, &len);
	found = strstr(out, want) != NULL;
	free(out);
	return found;
}

/* An agent's life: every window a new process (target) whose functions all have names and
 * files never seen before, sampled, ended, the window written and freed, the names
 * collected. What the names hold must stay within their share of the budget, the heap
 * flat, and every window (and a tap across windows) must still name its own functions. */
static void test_names_of_ended_windows_are_freed(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .symtab_bytes = BUDGET }, "proc");
	uint64_t codes[RING], names[RING], files[RING];
	struct profile *tap = NULL;
	size_t before = 0, after, names_warm = 0, names_max = 0;
	unsigned int seq = 0;

	(void)state;
	for (size_t i = 0; i < RING; i++) {
		names[i] = fx_str(fx, "f_00000000");
		files[i] = fx_str(fx, "/t/00000000");
		codes[i] = fx_code(fx, "x", "x", 1);
		memcpy((uint8_t *)(uintptr_t)codes[i] + FX_CO_QUALNAME, &names[i], 8);
		memcpy((uint8_t *)(uintptr_t)codes[i] + FX_CO_FILENAME, &files[i], 8);
	}
	for (unsigned int w = 0; w < WINDOWS; w++) {
		struct profile *win, *ps[2];

		fx->t.id = 100 + w;
		assert_int_equal(profile__add_target(fx->p, &fx->t), 0);
		if (tap)
			assert_int_equal(profile__add_target(tap, &fx->t), 0);
		for (size_t i = 0; i < RING; i++, seq++) {
			renumber(names[i], seq);
			renumber(files[i], seq);
			fx_sample(fx, 0, &codes[i], 1, 1);
		}
		if (w == 1) {
			/* a pull that spans windows: its one stack is of this window's last code */
			size_t size;
			struct pw_sample_hdr *h =
				fx_record(fx, 0, 0, 0, &codes[RING - 1], 1, &size);

			tap = profile__new_tap(fx->p);
			assert_non_null(tap);
			assert_int_equal(profile__add_record(tap, h, size), 0);
			free(h);
		}
		profile__target_gone(fx->p, fx->t.id);
		if (tap)
			profile__target_gone(tap, fx->t.id);
		win = profile__rotate(fx->p);
		assert_non_null(win);
		assert_int_equal(agg__total(profile__agg(win)), RING);
		assert_true(folded_has(win, seq - 1) && folded_has(win, seq - RING));
		profile__free(win);
		ps[0] = fx->p;
		ps[1] = tap;
		profile__collect_names(ps, 2);
		if (w == WINDOWS / 3) {
			before = heap_in_use();
			names_warm = names_max;
		}
		if (profile__symtab_stats(fx->p)->func_bytes > names_max)
			names_max = profile__symtab_stats(fx->p)->func_bytes;
	}
	after = heap_in_use();
	print_message("heap in use: %zu -> %zu bytes; names at most %zu bytes (%zu in the first "
		      "third), %llu freed\n",
		      before, after, names_max, names_warm,
		      (unsigned long long)profile__symtab_stats(fx->p)->names_collected);
	assert_true(profile__symtab_stats(fx->p)->names_collected > 0);
	/* collected past their share of the budget (a quarter): with their tables' room (which
	 * doubles, and indexes of two tables) they stay under the budget, where uncollected
	 * they would pass three times it (60 windows of 512 names of ~100 bytes); the heap is
	 * what proves them flat */
	assert_true(names_max < BUDGET);
	assert_true(after < before + (64 << 10));
	/* the tap's function was made in window 1 and is named still */
	assert_true(folded_has(tap, 2 * RING - 1));
	profile__free(tap);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_code_objects_all_the_time_keep_the_profile_in_budget),
		cmocka_unit_test(test_names_of_ended_windows_are_freed),
	};

	return cmocka_run_group_tests_name("profile_memory", tests, NULL, NULL);
}
