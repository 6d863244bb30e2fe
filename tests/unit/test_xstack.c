// SPDX-License-Identifier: MIT
/* Stack records waiting for their samples (user/symbolize/xstack.c) hold memory only while
 * they wait: threads that come and go leave nothing behind, records whose sample never came
 * are dropped once stale and counted, and records of runs still in flight are never dropped
 * for being many. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "symbolize/xstack.h"

#define PAYLOAD 16384 /* about what --native ships a sample */
#define MS (1000 * 1000ull)

static uint8_t rec[sizeof(struct pw_stack_hdr) + PAYLOAD];

static void add_stack(struct xstack *x, uint32_t tid, uint64_t t)
{
	struct pw_stack_hdr h = { .kind = PW_REC_USTACK, .tid = tid, .time_ns = t, .len = PAYLOAD };

	memcpy(rec, &h, sizeof(h));
	memset(rec + sizeof(h), (int)(tid & 0xff), PAYLOAD);
	assert_int_equal(xstack__add_stack(x, rec, sizeof(rec)), 0);
}

/* The sample of tid at t: true when it came out paired with its stack record (checked). */
static bool pair(struct xstack *x, uint32_t tid, uint64_t t)
{
	struct pw_sample_hdr h = {
		.kind = PW_REC_SAMPLE, .flags = PW_SF_USTACK, .tid = tid, .pid = tid, .time_ns = t
	};
	struct xstack_parts parts;
	const void *out;
	size_t size;

	assert_int_equal(xstack__pair(x, &h, sizeof(h), &out, &size), 0);
	if (out == (const void *)&h)
		return false;
	assert_int_equal(xstack_parts(out, size, &parts), 0);
	assert_non_null(parts.ustack);
	assert_int_equal(parts.ustack->tid, tid);
	assert_int_equal(parts.ustack->time_ns, t);
	assert_int_equal(((const uint8_t *)(parts.ustack + 1))[PAYLOAD - 1], tid & 0xff);
	return true;
}

/* A thread a process: each one's record is freed with its sample, so 20,000 lifetimes hold
 * what one does (the table used to keep every thread's last record, 16 KiB each). */
static void test_threads_that_come_and_go_leave_nothing(void **state)
{
	struct xstack *x = xstack__new();
	size_t after_one = 0;

	(void)state;
	for (uint32_t i = 0; i < 20000; i++) {
		add_stack(x, 1000 + i, 1000 * MS + i * MS);
		assert_true(pair(x, 1000 + i, 1000 * MS + i * MS));
		if (!i)
			after_one = xstack__bytes(x);
	}
	assert_int_equal(xstack__stats(x)->paired, 20000);
	assert_int_equal(xstack__stats(x)->unpaired, 0);
	assert_true(xstack__bytes(x) <= after_one);
	assert_true(xstack__bytes(x) < 2 * sizeof(rec) + 4096);
	xstack__free(x);
}

/* Samples lost after their stack records (a full ring buffer), one a thread: at one a
 * millisecond for 20 s, the records are dropped once a second old, so what waits stays
 * about a second's worth, twice over at most (the next look comes when twice as many as
 * were left wait); 10,000 at once (no time passing) and the table starts over at its cap.
 * Every one is counted, and pairing goes on. */
static void test_records_whose_sample_never_came_are_dropped(void **state)
{
	struct xstack *x = xstack__new();
	size_t most = 0;
	uint32_t i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		add_stack(x, 5000 + i, 1000 * MS + (uint64_t)i * MS);
		if (xstack__bytes(x) > most)
			most = xstack__bytes(x);
	}
	assert_true(most < 2100 * (sizeof(rec) + 128));
	most = 0;
	for (; i < 30000; i++) {
		add_stack(x, 5000 + i, 21000 * MS);
		if (xstack__bytes(x) > most)
			most = xstack__bytes(x);
	}
	assert_true(most < 4096 * (sizeof(rec) + 128));
	add_stack(x, 7, 30000 * MS);
	assert_true(pair(x, 7, 30000 * MS));
	xstack__flush(x);
	assert_int_equal(xstack__stats(x)->unpaired, 30000);
	assert_int_equal(xstack__stats(x)->paired, 1);
	assert_true(xstack__bytes(x) < 2 * sizeof(rec) + 512 * 1024);
	xstack__free(x);
}

/* Many runs in flight at once (one a CPU, their samples still to come): none is dropped
 * when the table is looked over, however many there are. */
static void test_records_in_flight_are_kept(void **state)
{
	struct xstack *x = xstack__new();

	(void)state;
	for (uint32_t i = 0; i < 1000; i++)
		add_stack(x, 100 + i, 5000 * MS + i);
	for (uint32_t i = 0; i < 1000; i++)
		assert_true(pair(x, 100 + i, 5000 * MS + i));
	assert_int_equal(xstack__stats(x)->paired, 1000);
	assert_int_equal(xstack__stats(x)->unpaired, 0);
	/* a record of a run whose sample was lost is not the next run's */
	add_stack(x, 9, 6000 * MS);
	add_stack(x, 9, 6000 * MS + 1);
	assert_int_equal(xstack__stats(x)->unpaired, 1);
	assert_false(pair(x, 9, 6000 * MS));
	assert_int_equal(xstack__stats(x)->unpaired, 2);
	assert_int_equal(xstack__stats(x)->missing, 1);
	xstack__free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_that_come_and_go_leave_nothing),
		cmocka_unit_test(test_records_whose_sample_never_came_are_dropped),
		cmocka_unit_test(test_records_in_flight_are_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
