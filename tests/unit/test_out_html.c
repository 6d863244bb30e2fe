// SPDX-License-Identifier: MIT
/* Unit tests for user/output/out_html.c: the call tree sent to the page (exact, for a small
 * profile), thread root frames, hostile names that must stay inside the JSON data block,
 * and a 100,000-stack profile (written to $PYWALK_FLAME_100K when set, for the browser
 * load-time test in tests/e2e/test_formats.py). */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>
#include <cmocka.h>

#define DATA_OPEN "<script type=\"application/json\" id=\"pywalk-data\">"

/* The JSON data block of a page: points into `page`, sets *len. */
static const char *data_block(const char *page, size_t *len)
{
	const char *start = strstr(page, DATA_OPEN), *end;

	assert_non_null(start);
	start += strlen(DATA_OPEN);
	end = strstr(start, "</script>");
	assert_non_null(end);
	*len = end - start;
	return start;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_html_tree_merges_prefixes_sorted_by_name(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t m = fx_code(fx, "main", "/app.py", 3), w = fx_code(fx, "work", "/app.py", 7);
	uint64_t a = fx_code(fx, "aux", "/app.py", 9);
	size_t len, dlen;
	char *page, want[512];
	const char *data;

	(void)state;
	fx_sample(fx, 0, (uint64_t[]){ m, w }, 2, 3);
	fx_sample(fx, 0, (uint64_t[]){ m, a }, 2, 2);
	fx_sample(fx, 0, (uint64_t[]){ m }, 1, 1);
	page = fx_write(fx, out_html_write, &len);
	assert_non_null(page);
	data = data_block(page, &dlen);
	assert_true(fx_json_valid(data, dlen));
	/* strings and frames in order of first use; children by name: aux before work */
	assert_non_null(
		strstr(data, "\"unit\":\"samples\",\"total\":6,\"root_self\":0,\"frequency_hz\":99,"
			     "\"period_ns\":10101010,\"start_ns\":1700000000000000000,"
			     "\"duration_ns\":2000000000,\n"));
	assert_non_null(strstr(data, "\"strings\":[\n\"main\",\n\"/app.py\",\n\"work\",\n"
				     "\"aux\"],\n"
				     "\"frames\":[0,1,3,2,1,7,3,1,9],\n"
				     "\"nodes\":[\n0,1,1,2,2,2,1,2,3],\n"));
	/* each stack's end node in the page (1 main, 2 aux, 3 work), its thread, samples */
	assert_non_null(strstr(data, "\"stacks\":[3,0,3,2,0,2,1,0,1]}"));
	snprintf(want, sizeof(want), "<title>pywalk flame graph: proc (%d)</title>", getpid());
	assert_non_null(strstr(page, want));
	free(page);
	fx_free(fx);
}

static void test_html_thread_roots_have_no_file(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_thread = true }, "proc");
	uint64_t m = fx_code(fx, "main", "/app.py", 3);
	size_t len, dlen;
	char *page;
	const char *data;

	(void)state;
	fx_sample(fx, 4242, (uint64_t[]){ m }, 1, 2);
	page = fx_write(fx, out_html_write, &len);
	assert_non_null(page);
	data = data_block(page, &dlen);
	assert_true(fx_json_valid(data, dlen));
	/* "? (4242)" is a root frame: file -1; main sits below it at depth 2 */
	assert_non_null(strstr(data, "\"strings\":[\n\"? (4242)\",\n\"main\",\n\"/app.py\"],\n"
				     "\"frames\":[0,-1,0,1,2,3],\n"
				     "\"nodes\":[\n0,1,0,1,2,2],\n"));
	/* the thread filter's list: thread label, process label; the stack ends at node 2 */
	assert_non_null(strstr(data, "\"threads\":[\n[\"? (4242)\",\"proc ("));
	assert_non_null(strstr(data, "\"stacks\":[2,0,2]}"));
	free(page);
	fx_free(fx);
}

static void test_html_hostile_names_cannot_leave_the_data_block(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_thread = true }, "</title><b>");
	size_t n = sizeof(fx_hostile) / sizeof(fx_hostile[0]), len, dlen;
	uint64_t root = fx_code(fx, "<module>", "</script>.py", 1);
	struct strbuf want = { 0 };
	char *page;
	const char *data;

	(void)state;
	/* our own thread's name is read from /proc: make it hostile too (15 bytes max) */
	assert_int_equal(prctl(PR_SET_NAME, "</script>;\"&'\t", 0, 0, 0), 0);
	for (size_t i = 0; i < n; i++)
		fx_sample(fx, 0, (uint64_t[]){ root, fx_code(fx, fx_hostile[i], fx_hostile[i], 5) },
			  2, 1);
	page = fx_write(fx, out_html_write, &len);
	prctl(PR_SET_NAME, "test_out_html", 0, 0, 0);
	assert_non_null(page);
	/* the template's two script elements are the only ones */
	assert_int_equal(count(page, "<script"), 2);
	assert_int_equal(count(page, "</script"), 2);
	data = data_block(page, &dlen);
	assert_true(fx_json_valid(data, dlen));
	assert_null(memchr(data, '<', dlen));
	assert_null(memchr(data, '>', dlen));
	for (size_t i = 0; i < n; i++) {
		strbuf_reset(&want);
		assert_int_equal(strbuf_add(&want, "\"", 1), 0);
		assert_int_equal(escape_json_script(&want, fx_hostile[i]), 0);
		assert_int_equal(strbuf_add(&want, "\"", 1), 0);
		assert_non_null(strstr(data, want.buf));
	}
	assert_non_null(strstr(data, "\"\\u003c/script\\u003e;\\\"\\u0026'\\t ("));
	/* the title is HTML text: escaped as such */
	assert_non_null(strstr(page, "<title>pywalk flame graph: &lt;/title&gt;&lt;b&gt; ("));
	strbuf_free(&want);
	free(page);
	fx_free(fx);
}

static void test_html_empty_profile_is_valid(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "idle");
	size_t len, dlen;
	char *page = fx_write(fx, out_html_write, &len);
	const char *data;

	(void)state;
	assert_non_null(page);
	data = data_block(page, &dlen);
	assert_true(fx_json_valid(data, dlen));
	assert_non_null(strstr(data, "\"total\":0,"));
	assert_non_null(strstr(data, "\"nodes\":[],\n\"threads\":[],\n\"stacks\":[]}"));
	assert_non_null(strstr(page, "<title>pywalk flame graph (no samples)</title>"));
	free(page);
	fx_free(fx);
}

/* 100,000 distinct stacks: five levels picked by the decimal digits of the stack number
 * under a common prefix, then a pseudo-random tail of 0-9 frames; counts 1-20. */
static void test_html_100k_stacks(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "python3");
	uint64_t prefix[3], level[5][10], tail[50][3], stack[32];
	uint32_t rng = 12345;
	const char *path = getenv("PYWALK_FLAME_100K");
	struct timespec t0, t1;
	size_t len, dlen;
	char name[64], file[64], *page;
	const char *data;

	(void)state;
	prefix[0] = fx_code(fx, "<module>", "/srv/app/main.py", 1);
	prefix[1] = fx_code(fx, "main", "/srv/app/main.py", 40);
	prefix[2] = fx_code(fx, "Server.serve_forever", "/srv/app/server.py", 120);
	for (int l = 0; l < 5; l++)
		for (int k = 0; k < 10; k++) {
			snprintf(name, sizeof(name), "layer%d.handler_%d", l, k);
			snprintf(file, sizeof(file), "/srv/app/layer%d.py", l);
			level[l][k] = fx_code(fx, name, file, 10 * k + 1);
		}
	for (int k = 0; k < 50; k++)
		for (int ln = 0; ln < 3; ln++) {
			snprintf(name, sizeof(name), "lib.helper_%02d", k);
			snprintf(file, sizeof(file), "/usr/lib/python3/lib%d.py", k % 7);
			tail[k][ln] = fx_code(fx, name, file, 100 + ln);
		}
	for (uint32_t i = 0; i < 100000; i++) {
		uint32_t n = 0, ntail, d = i;

		for (int k = 0; k < 3; k++)
			stack[n++] = prefix[k];
		for (int l = 0; l < 5; l++, d /= 10)
			stack[n++] = level[l][d % 10];
		rng = rng * 1103515245 + 12345;
		ntail = (rng >> 16) % 10;
		for (uint32_t k = 0; k < ntail; k++) {
			rng = rng * 1103515245 + 12345;
			stack[n++] = tail[(rng >> 8) % 50][(rng >> 20) % 3];
		}
		fx_sample(fx, 0, stack, n, 1 + (rng >> 4) % 20);
	}
	assert_int_equal(agg__nstacks(profile__agg(fx->p)), 100000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	page = fx_write(fx, out_html_write, &len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(page);
	data = data_block(page, &dlen);
	assert_true(fx_json_valid(data, dlen));
	print_message("100000 stacks: %zu bytes of HTML, written in %.0f ms\n", len,
		      (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (path) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(page, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
	}
	free(page);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_html_tree_merges_prefixes_sorted_by_name),
		cmocka_unit_test(test_html_thread_roots_have_no_file),
		cmocka_unit_test(test_html_hostile_names_cannot_leave_the_data_block),
		cmocka_unit_test(test_html_empty_profile_is_valid),
		cmocka_unit_test(test_html_100k_stacks),
	};

	return cmocka_run_group_tests_name("out_html", tests, NULL, NULL);
}
