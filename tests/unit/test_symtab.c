// SPDX-License-Identifier: MIT
/* Symbolization against fake code objects in this process: names decode to UTF-8, a code
 * object whose tag differs from the sampled one is never named (address reuse), a cached
 * symbol is not reused for a new object at the same address, and the code-object cache
 * keeps to its byte budget (evicting the least recently used, forgetting ended targets,
 * cutting line tables). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_out_fixture.h"

static void test_reused_address_is_not_named_after_the_old_object(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t code = fx_code(fx, "first", "a.py", 10);
	uint8_t *co = (uint8_t *)(uintptr_t)code;
	uint64_t new_name = fx_str(fx, "second");

	(void)state;
	fx_sample(fx, 0, &code, 1, 1);
	assert_int_equal(agg__total(profile__agg(fx->p)), 1);
	/* the object at this address is now another function: a sample of it must not be
	 * named after the cached "first" */
	memcpy(co + FX_CO_QUALNAME, &new_name, 8);
	fx_sample(fx, 0, &code, 1, 1);
	assert_int_equal(agg__total(profile__agg(fx->p)), 2);
	{
		const struct agg *agg = profile__agg(fx->p);
		const struct symtab *st = profile__symtab(fx->p);
		int seen_second = 0;

		for (size_t i = 0; i < agg__nstacks(agg); i++) {
			const struct agg_stack *s = agg__stack(agg, i);
			const struct agg_frame *f = agg__frame(agg, agg__stack_frames(agg, s)[0]);

			seen_second += !strcmp(symtab__func_name(st, f->func), "second");
		}
		assert_int_equal(seen_second, 1);
	}
	fx_free(fx);
}

/* One record of a one-frame stack of `code` sampled with `tag`; the bucket it fell in. */
static void add_one_frame_record(struct fx *fx, uint64_t code, uint32_t tag)
{
	size_t size = sizeof(struct pw_sample_hdr) + sizeof(struct pw_frame);
	struct pw_sample_hdr *h = calloc(1, size);
	struct pw_frame *fr = (struct pw_frame *)(h + 1);

	h->kind = PW_REC_SAMPLE;
	h->target = fx->t.id;
	h->pid = (uint32_t)getpid();
	h->tid = (uint32_t)gettid();
	h->nframes = 1;
	*fr = (struct pw_frame){ .code = code, .instr = PW_INSTR_NONE, .tag = tag };
	assert_int_equal(profile__add_record(fx->p, h, size), 0);
	free(h);
}

static void test_object_changed_since_the_sample_is_dropped_as_stale(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");

	(void)state;
	add_one_frame_record(fx, fx_code(fx, "f", "a.py", 1), 0x12345678);
	assert_int_equal(profile__drops(fx->p)->n[PROFILE_DROP_STALE], 1);
	assert_int_equal(profile__dropped(fx->p), 1);
	assert_int_equal(agg__total(profile__agg(fx->p)), 0);
	fx_free(fx);
}

/* A live process whose code object cannot be read is not "exited": the summary names the
 * reason that happened */
static void test_unreadable_code_in_a_live_process_is_its_own_reason(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");

	(void)state;
	add_one_frame_record(fx, 0x10, 0); /* unmapped in this live process */
	assert_int_equal(profile__drops(fx->p)->n[PROFILE_DROP_UNREADABLE], 1);
	assert_int_equal(profile__drops(fx->p)->n[PROFILE_DROP_EXITED], 0);
	assert_int_equal(profile__dropped(fx->p), 1);
	assert_string_equal(profile_drop_name(PROFILE_DROP_UNREADABLE), "unreadable");
	fx_free(fx);
}

/* The agent's windows take their drops with them; the run's summary still counts them all. */
static void test_drops_of_rotated_windows_count_for_the_run(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct profile_drops run;
	struct profile *w1, *w2;

	(void)state;
	add_one_frame_record(fx, 0x10, 0);
	w1 = profile__rotate(fx->p);
	assert_non_null(w1);
	assert_int_equal(profile__drops(w1)->n[PROFILE_DROP_UNREADABLE], 1);
	assert_int_equal(profile__dropped(fx->p), 0);
	add_one_frame_record(fx, 0x10, 0);
	add_one_frame_record(fx, 0x10, 0);
	w2 = profile__rotate(fx->p);
	assert_non_null(w2);
	assert_int_equal(profile__dropped(w2), 2);
	add_one_frame_record(fx, 0x10, 0);
	profile__run_drops(fx->p, &run);
	assert_int_equal(run.n[PROFILE_DROP_UNREADABLE], 4);
	assert_int_equal(profile__dropped(fx->p), 1);
	profile__free(w1);
	profile__free(w2);
	fx_free(fx);
}

/* U+0000 is a legal str character: it must not end the name (all three kinds) */
static void test_decode_str_keeps_what_follows_a_nul(void **state)
{
	static const uint8_t latin1[] = { 'n', 'u', 'l', 0, 'a', 'f', 't', 'e', 'r' };
	static const uint16_t ucs2[] = { 'n', 0, 0x20ac, 0 };
	static const uint32_t ucs4[] = { 0, 0x1f525, 0, 'z' };
	char *s;

	(void)state;
	s = symtab_decode_str(latin1, 9, 1, false);
	assert_string_equal(s, "nul" ESCAPE_NUL "after");
	free(s);
	s = symtab_decode_str((const uint8_t *)ucs2, 4, 2, false);
	assert_string_equal(s, "n" ESCAPE_NUL "\xe2\x82\xac" ESCAPE_NUL);
	free(s);
	s = symtab_decode_str((const uint8_t *)ucs4, 4, 4, true);
	assert_string_equal(s, ESCAPE_NUL "\xf0\x9f\x94\xa5" ESCAPE_NUL "z\xe2\x80\xa6");
	free(s);
}

static void test_decode_str_is_valid_utf8(void **state)
{
	static const uint16_t ucs2[] = { 'a', 0xd800, 0x20ac };
	static const uint32_t ucs4[] = { 0x1f525, 0x110000 };
	char *s;

	(void)state;
	s = symtab_decode_str((const uint8_t *)ucs2, 3, 2, false);
	assert_string_equal(s, "a\xef\xbf\xbd\xe2\x82\xac"); /* lone surrogate -> U+FFFD */
	free(s);
	s = symtab_decode_str((const uint8_t *)ucs4, 2, 4, true);
	assert_string_equal(s, "\xf0\x9f\x94\xa5\xef\xbf\xbd\xe2\x80\xa6"); /* cut marked by ... */
	free(s);
	s = symtab_decode_str((const uint8_t *)"\xe9", 1, 1, false);
	assert_string_equal(s, "\xc3\xa9"); /* latin-1 */
	free(s);
}

/* Fill the stack below this frame with a pattern, so a header byte read() left unread
 * shows up as 0x7f... instead of whatever was there. */
static __attribute__((noinline)) void dirty_stack(void)
{
	volatile uint8_t junk[8192];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0x7f;
}

/* Debug offsets may place a str's length after its state word: the header read must cover
 * both fields, not stop after the state. */
static void test_str_length_after_state_is_read(void **state)
{
	const struct py_objlayout lay = {
		.co_filename = 16,
		.co_name = 24,
		.co_qualname = 24,
		.co_linetable = 32,
		.co_firstlineno = 40,
		.co_read_size = 48,
		.str_length = 48,
		.str_state = 16,
		.str_ascii_data = 56,
		.str_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
		.str_kind_shift = 2,
		.ob_type = 8,
		.lt_format = LINETABLE_LOCATION,
		.tag_off = PW_OFF_NONE,
		.tag_name_word = 0xff,
	};
	uint64_t str[64], bytes[5] = { 0 }, code[6] = { 0 };
	uint32_t str_state = 1u << 5 | 1u << 6 | 1u << 2; /* compact, ASCII, 1 byte a char */
	struct symtab *st = symtab__new(0);
	struct symtab_target t = { .id = 1, .pid = getpid(), .lay = &lay };
	int64_t sym;

	(void)state;
	/* characters past the length are not NUL: a wrong length shows in the name */
	memset(str, 'x', sizeof(str));
	memset(str, 0, 56);
	str[6] = 5;
	memcpy((uint8_t *)str + 16, &str_state, 4);
	memcpy((uint8_t *)str + 56, "hello", 5);
	code[2] = code[3] = (uintptr_t)str;
	code[4] = (uintptr_t)bytes;
	code[5] = 7;
	dirty_stack();
	sym = symtab__resolve(st, &t, (uintptr_t)code, 0);
	assert_true(sym >= 0);
	assert_string_equal(symtab__func_name(st, symtab__func(st, sym)), "hello");
	symtab__free(st);
}

/* ---- the code-object cache's byte budget --------------------------------------------- */

/* A bytes object holding a location table of `units` one-code-unit entries (ONE_LINE1, 3
 * bytes each): instruction i is on line firstlineno + i + 1. */
static uint64_t line_table(struct fx *fx, size_t units)
{
	uint8_t *b = fx_alloc(fx, FX_BYTES_DATA + 3 * units + 1);
	uint64_t size = 3 * units;

	memcpy(b + FX_BYTES_SIZE, &size, 8);
	for (size_t i = 0; i < units; i++) {
		b[FX_BYTES_DATA + 3 * i] = 0x80 | 11 << 3;
		b[FX_BYTES_DATA + 3 * i + 1] = 1;
		b[FX_BYTES_DATA + 3 * i + 2] = 2;
	}
	return (uint64_t)(uintptr_t)b;
}

/* A code object named `name` in `file` (a str made once), with line table `table`. */
static uint64_t code_with(struct fx *fx, const char *name, uint64_t file, uint64_t table, int line)
{
	uint64_t co = fx_code(fx, name, "unused", line);

	memcpy((uint8_t *)(uintptr_t)co + FX_CO_FILENAME, &file, 8);
	memcpy((uint8_t *)(uintptr_t)co + FX_CO_LINETABLE, &table, 8);
	return co;
}

/* The tag the sampler folds from the code object (as fx_sample does). */
static uint32_t tag_of_code(uint64_t co)
{
	__u64 words[PW_CODE_TAG_WORDS] = { 0 };

	memcpy(words, (const uint8_t *)(uintptr_t)co + FX_TAG_OFF, FX_TAG_SIZE);
	return pw_code_tag(words, FX_TAG_MASK, NULL);
}

static struct symtab_target target_of(const struct fx *fx, uint32_t id)
{
	return (struct symtab_target){ .id = id, .pid = getpid(), .lay = &fx->t.ver.obj };
}

static int64_t resolve(struct symtab *st, const struct symtab_target *t, uint64_t co)
{
	int64_t h = symtab__resolve(st, t, co, tag_of_code(co));

	assert_true(h >= 0);
	return h;
}

#define NCODES 3000
#define BUDGET (64 << 10)

static void test_code_cache_stays_within_its_byte_budget(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct symtab *st = symtab__new(BUDGET);
	struct symtab_target t = target_of(fx, 1);
	uint64_t file = fx_str(fx, "m.py"), table = line_table(fx, 60);
	static uint64_t codes[NCODES];
	char name[32];

	(void)state;
	for (int i = 0; i < NCODES; i++) {
		int64_t h;

		snprintf(name, sizeof(name), "f%d", i);
		codes[i] = code_with(fx, name, file, table, 10);
		h = resolve(st, &t, codes[i]);
		assert_string_equal(symtab__func_name(st, symtab__func(st, h)), name);
		assert_true(symtab__stats(st)->bytes <= BUDGET);
	}
	assert_int_equal(symtab__stats(st)->budget, BUDGET);
	assert_true(symtab__stats(st)->entries > 50); /* the budget is used, not wasted */
	assert_int_equal(symtab__stats(st)->evictions + symtab__stats(st)->entries, NCODES);
	assert_int_equal(symtab__stats(st)->from_memory, NCODES);
	/* the names stay: they are the profile's, not the cache's */
	assert_int_equal(symtab__nfuncs(st) >= NCODES, 1);
	symtab__free(st);
	fx_free(fx);
}

static void test_most_recently_used_entry_is_not_evicted(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct symtab *st = symtab__new(BUDGET);
	struct symtab_target t = target_of(fx, 1);
	uint64_t file = fx_str(fx, "m.py"), table = line_table(fx, 60);
	uint64_t hot = code_with(fx, "hot", file, table, 1);
	int64_t h_hot = resolve(st, &t, hot);
	char name[32];

	(void)state;
	for (int i = 0; i < NCODES; i++) {
		snprintf(name, sizeof(name), "cold%d", i);
		resolve(st, &t, code_with(fx, name, file, table, 1));
		/* used in every sample: always the same entry, never read again */
		assert_int_equal(resolve(st, &t, hot), h_hot);
	}
	assert_true(symtab__stats(st)->evictions > 0);
	assert_int_equal(symtab__stats(st)->from_memory, NCODES + 1);
	symtab__free(st);
	fx_free(fx);
}

/* A handle whose entry was evicted names nothing, in particular not the function that
 * happens to hold the id the accessors fall back to. */
static void test_evicted_handle_names_no_function(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct symtab *st = symtab__new(BUDGET);
	struct symtab_target t = target_of(fx, 1);
	uint64_t file = fx_str(fx, "m.py"), table = line_table(fx, 60);
	uint64_t first = code_with(fx, "first", file, table, 1);
	uint64_t victim = code_with(fx, "victim", file, table, 1);
	int64_t h, h_again;
	char name[32];
	uint32_t func;

	(void)state;
	resolve(st, &t, first); /* the first function interned */
	h = resolve(st, &t, victim);
	assert_int_equal(symtab__line(st, h, 5), 7);
	for (int i = 0; i < NCODES; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		resolve(st, &t, code_with(fx, name, file, table, 1));
	}
	func = symtab__func(st, h);
	assert_string_equal(symtab__func_name(st, func), "?");
	assert_string_equal(symtab__func_file(st, func), "?");
	assert_int_equal(symtab__func_firstline(st, func), 0);
	assert_int_equal(symtab__line(st, h, 5), 0);
	assert_int_equal(symtab__line(st, h, PW_INSTR_NONE), 0);
	assert_false(symtab__is_shim(st, h));
	/* asked for again, it is read again: a new handle, the right name */
	h_again = resolve(st, &t, victim);
	assert_int_not_equal(h_again, h);
	assert_string_equal(symtab__func_name(st, symtab__func(st, h_again)), "victim");
	assert_int_equal(symtab__line(st, h_again, 5), 7);
	assert_string_equal(symtab__func_name(st, symtab__func(st, h)), "?");
	/* never-valid handles name nothing either */
	assert_string_equal(symtab__func_name(st, symtab__func(st, -1)), "?");
	assert_string_equal(symtab__func_name(st, symtab__func(st, (int64_t)1 << 40)), "?");
	symtab__free(st);
	fx_free(fx);
}

static void test_forgetting_a_target_frees_its_entries(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct symtab *st = symtab__new(0);
	struct symtab_target a = target_of(fx, 1), b = target_of(fx, 2);
	uint64_t file = fx_str(fx, "m.py"), table = line_table(fx, 60);
	int64_t ha = 0, hb = 0;
	size_t bytes_one;
	char name[32];

	(void)state;
	for (int i = 0; i < 200; i++) {
		uint64_t co;

		snprintf(name, sizeof(name), "f%d", i);
		co = code_with(fx, name, file, table, 1);
		/* the same address in two lifetimes: two entries */
		ha = resolve(st, &a, co);
		hb = resolve(st, &b, co);
	}
	assert_int_equal(symtab__stats(st)->entries, 400);
	bytes_one = symtab__stats(st)->bytes;
	symtab__forget_target(st, 1);
	assert_int_equal(symtab__stats(st)->entries, 200);
	assert_true(symtab__stats(st)->bytes < bytes_one);
	assert_string_equal(symtab__func_name(st, symtab__func(st, ha)), "?");
	assert_string_equal(symtab__func_name(st, symtab__func(st, hb)), "f199");
	symtab__forget_target(st, 2);
	assert_int_equal(symtab__stats(st)->entries, 0);
	symtab__forget_target(st, 3); /* nothing of it: nothing happens */
	/* only the index itself is left, and the freed slots are used again */
	assert_true(symtab__stats(st)->bytes < 400 * 200);
	resolve(st, &a, code_with(fx, "again", file, table, 1));
	assert_int_equal(symtab__stats(st)->entries, 1);
	symtab__free(st);
	fx_free(fx);
}

/* A line table is kept up to SYMTAB_MAX_LINETABLE bytes: instructions it no longer
 * covers get line 0, never a neighbour's line. */
static void test_line_table_over_the_limit_is_cut(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	struct symtab *st = symtab__new(0);
	struct symtab_target t = target_of(fx, 1);
	size_t units = SYMTAB_MAX_LINETABLE / 3 + 2000, kept = SYMTAB_MAX_LINETABLE / 3;
	uint64_t co = code_with(fx, "big", fx_str(fx, "m.py"), line_table(fx, units), 1000);
	int64_t h = resolve(st, &t, co);

	(void)state;
	assert_int_equal(symtab__line(st, h, 0), 1001);
	assert_int_equal(symtab__line(st, h, (uint32_t)kept - 1), 1000 + (int)kept);
	assert_int_equal(symtab__line(st, h, (uint32_t)kept), 0);
	assert_int_equal(symtab__line(st, h, (uint32_t)units - 1), 0);
	assert_true(symtab__stats(st)->bytes >= SYMTAB_MAX_LINETABLE);
	assert_true(symtab__stats(st)->bytes < SYMTAB_MAX_LINETABLE + 4096);
	symtab__free(st);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reused_address_is_not_named_after_the_old_object),
		cmocka_unit_test(test_object_changed_since_the_sample_is_dropped_as_stale),
		cmocka_unit_test(test_unreadable_code_in_a_live_process_is_its_own_reason),
		cmocka_unit_test(test_drops_of_rotated_windows_count_for_the_run),
		cmocka_unit_test(test_decode_str_is_valid_utf8),
		cmocka_unit_test(test_decode_str_keeps_what_follows_a_nul),
		cmocka_unit_test(test_str_length_after_state_is_read),
		cmocka_unit_test(test_code_cache_stays_within_its_byte_budget),
		cmocka_unit_test(test_most_recently_used_entry_is_not_evicted),
		cmocka_unit_test(test_evicted_handle_names_no_function),
		cmocka_unit_test(test_forgetting_a_target_frees_its_entries),
		cmocka_unit_test(test_line_table_over_the_limit_is_cut),
	};

	return cmocka_run_group_tests_name("symtab", tests, NULL, NULL);
}
