// SPDX-License-Identifier: MIT
/* Unit tests for user/output/out_speedscope.c: the exact document for a small profile, one
 * profile per thread, weights with and without a known period, and hostile names kept
 * valid JSON. */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cmd/cmd.h"

/* two threads; 101: main>work x3, main>idle x1; 202: main>work x5 */
static struct fx *small_profile(void)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), b = fx_code(fx, "work", "/app.py", 20);
	uint64_t c = fx_code(fx, "idle", "/lib.py", 5);

	fx_sample(fx, 101, (uint64_t[]){ a, b }, 2, 3);
	fx_sample(fx, 101, (uint64_t[]){ a, c }, 2, 1);
	fx_sample(fx, 202, (uint64_t[]){ a, b }, 2, 5);
	return fx;
}

static void test_speedscope_small_profile_exact(void **state)
{
	struct fx *fx = small_profile();
	char want[2048];
	size_t len;
	char *out = fx_write(fx, out_speedscope_write, &len);

	(void)state;
	snprintf(want, sizeof(want),
		 "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		 "\"exporter\":\"pywalk " PYWALK_VERSION "\",\"name\":\"proc (%d)\",\n"
		 "\"shared\":{\"frames\":[\n"
		 "{\"name\":\"main\",\"file\":\"/app.py\",\"line\":10},\n"
		 "{\"name\":\"work\",\"file\":\"/app.py\",\"line\":20},\n"
		 "{\"name\":\"idle\",\"file\":\"/lib.py\",\"line\":5}]},\n"
		 "\"profiles\":["
		 "{\"type\":\"sampled\",\"name\":\"? (101)\",\"unit\":\"nanoseconds\","
		 "\"startValue\":0,\"endValue\":40404040,\n"
		 "\"samples\":[\n[0,1],\n[0,2]],\n\"weights\":[30303030,10101010]},\n"
		 "{\"type\":\"sampled\",\"name\":\"? (202)\",\"unit\":\"nanoseconds\","
		 "\"startValue\":0,\"endValue\":50505050,\n"
		 "\"samples\":[\n[0,1]],\n\"weights\":[50505050]}],\n"
		 "\"activeProfileIndex\":1}\n",
		 getpid());
	assert_non_null(out);
	assert_string_equal(out, want);
	assert_true(fx_json_valid(out, len));
	free(out);
	fx_free(fx);
}

static void test_speedscope_counts_samples_when_period_unknown(void **state)
{
	struct fx *fx = small_profile();
	size_t len;
	char *out;

	(void)state;
	profile__set_sampling(fx->p, 0, 0, 0);
	out = fx_write(fx, out_speedscope_write, &len);
	assert_non_null(out);
	assert_non_null(strstr(out, "\"unit\":\"none\",\"startValue\":0,\"endValue\":4,"));
	assert_non_null(strstr(out, "\"weights\":[3,1]"));
	assert_non_null(strstr(out, "\"weights\":[5]"));
	free(out);
	fx_free(fx);
}

static void test_speedscope_hostile_names_stay_json_strings(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "p\"<&>\n");
	struct strbuf want = { 0 };
	size_t n = sizeof(fx_hostile) / sizeof(fx_hostile[0]), len;
	uint64_t root = fx_code(fx, "<module>", "/srv/app;x\".py", 1);
	char *out;

	(void)state;
	for (size_t i = 0; i < n; i++)
		fx_sample(fx, 0,
			  (uint64_t[]){ root, fx_code(fx, fx_hostile[i], fx_hostile[n - 1 - i],
						      (int)i + 1) },
			  2, 1);
	out = fx_write(fx, out_speedscope_write, &len);
	assert_non_null(out);
	assert_true(fx_json_valid(out, len));
	/* every name and file appears as its JSON escape, in a frame of its own */
	for (size_t i = 0; i < n; i++) {
		strbuf_reset(&want);
		assert_int_equal(strbuf_add(&want, "{\"name\":\"", 9), 0);
		assert_int_equal(escape_json(&want, fx_hostile[i]), 0);
		assert_int_equal(strbuf_add(&want, "\",\"file\":\"", 10), 0);
		assert_int_equal(escape_json(&want, fx_hostile[n - 1 - i]), 0);
		assert_int_equal(strbuf_addf(&want, "\",\"line\":%zu}", i + 1), 0);
		assert_non_null(strstr(out, want.buf));
	}
	assert_non_null(strstr(out, "\"name\":\"p\\\"<&>\\n (")); /* the process name too */
	strbuf_free(&want);
	free(out);
	fx_free(fx);
}

/* trace: a profile per probe and thread, named after the probe; hits count once (unit
 * none), --latency's weigh nanoseconds */
static void test_speedscope_has_a_profile_per_probe(void **state)
{
	struct profile_opts o = { .nprobes = 2 };
	struct fx *fx;
	uint64_t a, b;
	char want[2048];
	size_t len;
	char *out;

	(void)state;
	o.probe_names[1] = "tracepoint:syscalls:sys_enter_getpid";
	o.probe_names[2] = "uprobe:libc.so.6:usleep";
	o.probe_ns[2] = true;
	fx = fx_new(&o, "proc");
	profile__set_sampling(fx->p, 0, 1700000000000000000ull, 1700000002000000000ull);
	a = fx_code(fx, "main", "/app.py", 10);
	b = fx_code(fx, "work", "/app.py", 20);
	fx_hit(fx, 2, 1500, 101, (uint64_t[]){ a, b }, 2, 2);
	fx_hit(fx, 1, 0, 101, (uint64_t[]){ a, b }, 2, 7);
	fx_hit(fx, 1, 0, 101, (uint64_t[]){ a }, 1, 1);
	out = fx_write(fx, out_speedscope_write, &len);
	snprintf(
		want, sizeof(want),
		"\"profiles\":["
		"{\"type\":\"sampled\",\"name\":\"tracepoint:syscalls:sys_enter_getpid / ? (101)\","
		"\"unit\":\"none\",\"startValue\":0,\"endValue\":8,\n"
		"\"samples\":[\n[0,1],\n[0]],\n\"weights\":[7,1]},\n"
		"{\"type\":\"sampled\",\"name\":\"uprobe:libc.so.6:usleep / ? (101)\","
		"\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":3000,\n"
		"\"samples\":[\n[0,1]],\n\"weights\":[3000]}],\n"
		"\"activeProfileIndex\":1}\n");
	assert_non_null(out);
	assert_true(fx_json_valid(out, len));
	assert_non_null(strstr(out, want));
	free(out);
	fx_free(fx);
}

static void test_speedscope_empty_profile_is_valid(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "idle");
	size_t len;
	char *out = fx_write(fx, out_speedscope_write, &len);

	(void)state;
	assert_non_null(out);
	assert_true(fx_json_valid(out, len));
	assert_non_null(strstr(out, "\"profiles\":[]"));
	free(out);
	fx_free(fx);
}

/* 99 Hz (a period of 10101010 ns); thread 101: main>work at 100 ms and one period later,
 * main>idle at 200 ms; thread 202: main>work at 150 ms */
static struct fx *timed_profile(size_t budget)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .timeline = true, .timeline_bytes = budget },
			       "proc");
	uint64_t a = fx_code(fx, "main", "/app.py", 10), b = fx_code(fx, "work", "/app.py", 20);
	uint64_t c = fx_code(fx, "idle", "/lib.py", 5);

	fx->time_ns = 100000000;
	fx_sample(fx, 101, (uint64_t[]){ a, b }, 2, 1);
	fx->time_ns = 110101010;
	fx_sample(fx, 101, (uint64_t[]){ a, b }, 2, 1);
	fx->time_ns = 150000000;
	fx_sample(fx, 202, (uint64_t[]){ a, b }, 2, 1);
	fx->time_ns = 200000000;
	fx_sample(fx, 101, (uint64_t[]){ a, c }, 2, 1);
	return fx;
}

/* samples in time order per thread, each a period long, a gap an empty sample, every
 * thread on the same axis (0 = the earliest sample's start) */
static void test_timeline_small_profile_exact(void **state)
{
	struct fx *fx = timed_profile(0);
	char want[2048];
	size_t len;
	char *out = fx_write(fx, out_timeline_write, &len);

	(void)state;
	snprintf(want, sizeof(want),
		 "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		 "\"exporter\":\"pywalk " PYWALK_VERSION "\",\"name\":\"proc (%d)\",\n"
		 "\"shared\":{\"frames\":[\n"
		 "{\"name\":\"main\",\"file\":\"/app.py\",\"line\":10},\n"
		 "{\"name\":\"work\",\"file\":\"/app.py\",\"line\":20},\n"
		 "{\"name\":\"idle\",\"file\":\"/lib.py\",\"line\":5}]},\n"
		 "\"profiles\":["
		 "{\"type\":\"sampled\",\"name\":\"? (101)\",\"unit\":\"nanoseconds\","
		 "\"startValue\":0,\"endValue\":110101010,\n"
		 "\"samples\":[\n[0,1],\n[0,1],\n[],\n[0,2]],\n"
		 "\"weights\":[10101010,10101010,79797980,10101010]},\n"
		 "{\"type\":\"sampled\",\"name\":\"? (202)\",\"unit\":\"nanoseconds\","
		 "\"startValue\":0,\"endValue\":60101010,\n"
		 "\"samples\":[\n[],\n[0,1]],\n\"weights\":[50000000,10101010]}],\n"
		 "\"activeProfileIndex\":0}\n",
		 getpid());
	assert_non_null(out);
	assert_string_equal(out, want);
	assert_true(fx_json_valid(out, len));
	free(out);
	fx_free(fx);
}

/* past its byte budget a sample is counted, not placed, and the count says so */
static void test_timeline_keeps_to_its_budget(void **state)
{
	struct fx *fx = timed_profile(2 * sizeof(struct profile_event));
	size_t n, len;
	char *out;

	(void)state;
	profile__timeline(fx->p, &n);
	assert_int_equal(n, 2);
	assert_int_equal(profile__timeline_dropped(fx->p), 2);
	assert_int_equal(agg__total(profile__agg(fx->p)), 4);
	out = fx_write(fx, out_timeline_write, &len);
	assert_non_null(out);
	assert_true(fx_json_valid(out, len));
	assert_non_null(strstr(out, "\"weights\":[10101010,10101010]}"));
	free(out);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_speedscope_small_profile_exact),
		cmocka_unit_test(test_speedscope_counts_samples_when_period_unknown),
		cmocka_unit_test(test_speedscope_hostile_names_stay_json_strings),
		cmocka_unit_test(test_speedscope_empty_profile_is_valid),
		cmocka_unit_test(test_timeline_small_profile_exact),
		cmocka_unit_test(test_timeline_keeps_to_its_budget),
		cmocka_unit_test(test_speedscope_has_a_profile_per_probe),
	};

	return cmocka_run_group_tests_name("out_speedscope", tests, NULL, NULL);
}
