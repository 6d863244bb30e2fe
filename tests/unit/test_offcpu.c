// SPDX-License-Identifier: MIT
/* Off-CPU pairing: a held stack comes out once, weighing its resumption's time; short waits,
 * lost resumptions, other lifetimes, the budget and the threads still waiting at the end
 * each land in their own bucket, and every held stack in exactly one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "profile/offcpu.h"

struct rec {
	struct pw_sample_hdr h;
	struct pw_frame f[2];
};

struct emitted {
	uint32_t tid[16];
	uint64_t weight[16];
	uint16_t probe[16];
	size_t n;
};

static int emit(void *ctx, const void *data, size_t size)
{
	struct emitted *e = ctx;
	struct pw_sample_hdr h;

	assert_true(size == sizeof(struct rec));
	memcpy(&h, data, sizeof(h));
	e->tid[e->n] = h.tid;
	e->weight[e->n] = h.weight;
	e->probe[e->n++] = h.probe;
	return 0;
}

static struct rec sample(uint32_t tid, uint32_t target, uint64_t t, uint16_t probe, uint64_t weight)
{
	struct rec r = { .h = { .kind = PW_REC_SAMPLE,
				.nframes = 2,
				.time_ns = t,
				.pid = 7,
				.tid = tid,
				.target = target,
				.probe = probe,
				.weight = weight } };
	return r;
}

static struct pw_offcpu_rec resumed(uint32_t tid, uint32_t target, uint64_t ns, uint32_t why)
{
	return (struct pw_offcpu_rec){
		.kind = PW_REC_OFFCPU, .tid = tid, .off_ns = ns, .target = target, .block = why
	};
}

static void check_buckets(const struct offcpu_stats *st)
{
	assert_int_equal(st->held, st->counted + st->short_blocks + st->open_at_end + st->replaced +
					   st->over_budget + st->ended);
}

static void test_a_held_stack_weighs_its_time_off_cpu(void **state)
{
	struct offcpu *o = offcpu__new(0, 1 << 20);
	struct emitted e = { 0 };
	struct rec s = sample(11, 3, 100, PW_PROBE_OFFCPU, 0), cpu = sample(11, 3, 90, 0, 1);
	struct pw_offcpu_rec r = resumed(11, 3, 5000, PW_BLOCK_IO);

	(void)state;
	/* an on-CPU sample is not the pairing's */
	assert_int_equal(offcpu__hold(o, &cpu, sizeof(cpu)), 0);
	assert_int_equal(offcpu__hold(o, &s, sizeof(s)), 1);
	assert_int_equal(offcpu__resume(o, &r, sizeof(r), emit, &e), 0);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.tid[0], 11);
	assert_int_equal(e.weight[0], 5000);
	assert_int_equal(e.probe[0], PW_PROBE_OFFCPU);
	/* once: a second resumption finds nothing */
	assert_int_equal(offcpu__resume(o, &r, sizeof(r), emit, &e), 0);
	assert_int_equal(e.n, 1);
	assert_int_equal(offcpu__stats(o)->unpaired, 1);
	assert_int_equal(offcpu__stats(o)->ns[PW_BLOCK_IO], 5000);
	check_buckets(offcpu__stats(o));
	offcpu__free(o);
}

static void test_short_lost_other_lifetime_and_budget(void **state)
{
	size_t one = sizeof(struct rec);
	struct offcpu *o = offcpu__new(1000, 2 * one);
	struct emitted e = { 0 };
	struct rec a = sample(1, 3, 100, PW_PROBE_OFFCPU, 0),
		   b = sample(2, 3, 100, PW_PROBE_OFFCPU, 0),
		   c = sample(3, 3, 100, PW_PROBE_OFFCPU, 0);
	struct pw_offcpu_rec shortr = resumed(1, 3, 999, PW_BLOCK_SLEEP),
			     other = resumed(2, 4, 5000, PW_BLOCK_SLEEP);

	(void)state;
	assert_int_equal(offcpu__hold(o, &a, one), 1);
	assert_int_equal(offcpu__hold(o, &b, one), 1);
	/* the budget holds two */
	assert_int_equal(offcpu__hold(o, &c, one), 1);
	assert_int_equal(offcpu__stats(o)->over_budget, 1);
	assert_int_equal(offcpu__resume(o, &shortr, sizeof(shortr), emit, &e), 0);
	assert_int_equal(offcpu__stats(o)->short_blocks, 1);
	/* a resumption of another lifetime of the same tid does not complete it */
	assert_int_equal(offcpu__resume(o, &other, sizeof(other), emit, &e), 0);
	assert_int_equal(offcpu__stats(o)->ended, 1);
	assert_int_equal(e.n, 0);
	/* a second switch-out of thread 1 before its resumption: the first is replaced */
	assert_int_equal(offcpu__hold(o, &a, one), 1);
	assert_int_equal(offcpu__hold(o, &a, one), 1);
	assert_int_equal(offcpu__stats(o)->replaced, 1);
	/* still waiting at the end: counted from its switch-out to then */
	assert_int_equal(offcpu__flush(o, 100 + 7000, emit, &e), 0);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.weight[0], 7000);
	assert_int_equal(offcpu__stats(o)->open_at_end, 1);
	assert_int_equal(offcpu__stats(o)->open_ns, 7000);
	check_buckets(offcpu__stats(o));
	offcpu__free(o);
}

/* a zero wait: the kernel saw a thread marked waiting at attach leave again unseen; its
 * held stack is not counted (its wait's length is unknown), and the bucket says so */
static void test_a_zero_wait_is_a_wait_not_seen_to_end(void **state)
{
	struct offcpu *o = offcpu__new(1000, 1 << 20);
	struct emitted e = { 0 };
	struct rec s = sample(5, 3, 100, PW_PROBE_OFFCPU, 0);
	struct pw_offcpu_rec r = resumed(5, 3, 0, PW_BLOCK_SLEEP);

	(void)state;
	assert_int_equal(offcpu__hold(o, &s, sizeof(s)), 1);
	assert_int_equal(offcpu__resume(o, &r, sizeof(r), emit, &e), 0);
	assert_int_equal(e.n, 0);
	assert_int_equal(offcpu__stats(o)->replaced, 1);
	assert_int_equal(offcpu__stats(o)->short_blocks, 0);
	assert_int_equal(offcpu__flush(o, 100 + 7000, emit, &e), 0);
	assert_int_equal(e.n, 0); /* nothing still held to count at the end */
	check_buckets(offcpu__stats(o));
	offcpu__free(o);
}

static void test_many_threads_reuse_their_slots(void **state)
{
	struct offcpu *o = offcpu__new(0, 1 << 20);
	struct emitted e = { 0 };

	(void)state;
	for (uint32_t round = 0; round < 50; round++) {
		for (uint32_t tid = 1; tid <= 300; tid++) {
			struct rec s = sample(tid, 9, round, PW_PROBE_OFFCPU, 0);

			assert_int_equal(offcpu__hold(o, &s, sizeof(s)), 1);
		}
		for (uint32_t tid = 1; tid <= 300; tid++) {
			struct pw_offcpu_rec r = resumed(tid, 9, tid, PW_BLOCK_PREEMPTED);

			e.n = 0;
			assert_int_equal(offcpu__resume(o, &r, sizeof(r), emit, &e), 0);
			assert_int_equal(e.n, 1);
			assert_int_equal(e.weight[0], tid);
		}
	}
	assert_int_equal(offcpu__stats(o)->counted, 50 * 300);
	e.n = 0;
	assert_int_equal(offcpu__flush(o, 1000, emit, &e), 0);
	assert_int_equal(e.n, 0);
	check_buckets(offcpu__stats(o));
	offcpu__free(o);
}

static void test_an_open_wait_counts_as_it_goes_and_once_in_all(void **state)
{
	struct offcpu *o = offcpu__new(1000, 1 << 20);
	struct emitted e = { 0 };
	struct rec s = sample(5, 3, 1000, PW_PROBE_OFFCPU, 0);
	struct pw_offcpu_rec r = resumed(5, 3, 350 * 1000000ull, PW_BLOCK_SLEEP);
	uint64_t sum = 0;

	(void)state;
	assert_int_equal(offcpu__hold(o, &s, sizeof(s)), 1);
	/* 50 ms in: less than a step, nothing yet */
	assert_int_equal(offcpu__count_open(o, 1000 + 50 * 1000000ull, emit, &e), 0);
	assert_int_equal(e.n, 0);
	assert_int_equal(offcpu__count_open(o, 1000 + 120 * 1000000ull, emit, &e), 0);
	assert_int_equal(offcpu__count_open(o, 1000 + 250 * 1000000ull, emit, &e), 0);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.weight[0], 120 * 1000000ull);
	assert_int_equal(e.weight[1], 130 * 1000000ull);
	/* it ends at 350 ms: the rest, 100 ms */
	assert_int_equal(offcpu__resume(o, &r, sizeof(r), emit, &e), 0);
	assert_int_equal(e.n, 3);
	for (size_t i = 0; i < e.n; i++)
		sum += e.weight[i];
	assert_int_equal(sum, 350 * 1000000ull);
	assert_int_equal(offcpu__stats(o)->ns[PW_BLOCK_SLEEP], 350 * 1000000ull);
	check_buckets(offcpu__stats(o));
	offcpu__free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_held_stack_weighs_its_time_off_cpu),
		cmocka_unit_test(test_short_lost_other_lifetime_and_budget),
		cmocka_unit_test(test_a_zero_wait_is_a_wait_not_seen_to_end),
		cmocka_unit_test(test_many_threads_reuse_their_slots),
		cmocka_unit_test(test_an_open_wait_counts_as_it_goes_and_once_in_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
