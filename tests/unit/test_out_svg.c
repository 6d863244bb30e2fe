// SPDX-License-Identifier: MIT
/* Unit tests for user/output/out_svg.c: boxes laid out as a flame graph (root at the bottom, children
 * by name, counts and shares in the tooltips), thin boxes left out, hostile names kept as XML
 * text. With $PYWALK_SVG_PAIR set to a directory, the SVG and the folded output of one
 * profile are written there (pair.svg, pair.folded) for tests/e2e/test_svg.py to compare. */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The y of the box whose <g> opening is `g` (its rect's). */
static double box_y(const char *svg, const char *g)
{
	const char *at = strstr(svg, g), *y;

	assert_non_null(at);
	y = strstr(at, "<rect x=\"");
	assert_non_null(y);
	y = strstr(y, " y=\"");
	assert_non_null(y);
	return strtod(y + 4, NULL);
}

static void test_svg_flame_graph_boxes_and_tooltips(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t m = fx_code(fx, "main", "/app.py", 3), w = fx_code(fx, "work", "/app.py", 7);
	uint64_t a = fx_code(fx, "aux", "/app.py", 9);
	size_t len;
	char *svg;

	(void)state;
	fx_sample(fx, 0, (uint64_t[]){ m, w }, 2, 3);
	fx_sample(fx, 0, (uint64_t[]){ m, a }, 2, 2);
	fx_sample(fx, 0, (uint64_t[]){ m }, 1, 1);
	svg = fx_write(fx, out_svg_write, &len);
	assert_non_null(svg);
	assert_true(!strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36));
	/* each box: its sample range and depth, then the full name, count and share */
	assert_non_null(strstr(svg, "<g class=\"f\" data-s=\"0\" data-n=\"6\" data-d=\"0\">"
				    "<title>all\n6 samples (100.00%)</title>"));
	assert_non_null(strstr(svg, "<g class=\"f\" data-s=\"0\" data-n=\"6\" data-d=\"1\">"
				    "<title>main (/app.py:3)\n6 samples (100.00%)</title>"));
	/* children by name, aux before work, each starting where the previous ends */
	assert_non_null(strstr(svg, "<g class=\"f\" data-s=\"0\" data-n=\"2\" data-d=\"2\">"
				    "<title>aux (/app.py:9)\n2 samples (33.33%)</title>"));
	assert_non_null(strstr(svg, "<g class=\"f\" data-s=\"2\" data-n=\"3\" data-d=\"2\">"
				    "<title>work (/app.py:7)\n3 samples (50.00%)</title>"));
	assert_non_null(strstr(svg, "<text x=\"13.00\" y=\""));
	assert_non_null(strstr(svg, "\">main (/app.py:3)</text>"));
	/* a flame graph: the root is the lowest box, callees above callers */
	assert_true(box_y(svg, "data-d=\"0\"") > box_y(svg, "data-d=\"1\""));
	assert_true(box_y(svg, "data-d=\"1\"") > box_y(svg, "data-d=\"2\""));
	assert_int_equal(count(svg, "<g class=\"f\""), 4);
	assert_int_equal(count(svg, "<script"), 1);
	assert_int_equal(count(svg, "]]>"), 1);
	free(svg);
	fx_free(fx);
}

/* Boxes under 0.1 px are not drawn (nor anything above them); the counts stay whole. */
static void test_svg_leaves_out_thin_boxes(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t m = fx_code(fx, "main", "/app.py", 3), w = fx_code(fx, "wide", "/app.py", 7);
	uint64_t t = fx_code(fx, "thin_fn", "/app.py", 9), c = fx_code(fx, "callee", "/app.py", 11);
	size_t len;
	char *svg;

	(void)state;
	fx_sample(fx, 0, (uint64_t[]){ m, w }, 2, 20000);
	fx_sample(fx, 0, (uint64_t[]){ m, t, c }, 3, 1);
	svg = fx_write(fx, out_svg_write, &len);
	assert_non_null(svg);
	assert_non_null(strstr(svg, "<title>all\n20,001 samples (100.00%)</title>"));
	assert_non_null(strstr(svg, "<title>wide (/app.py:7)\n20,000 samples"));
	assert_null(strstr(svg, "thin_fn"));
	assert_null(strstr(svg, "callee ("));
	free(svg);
	fx_free(fx);
}

static void test_svg_hostile_names_stay_text(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_thread = true }, "<t>]]>&");
	size_t n = sizeof(fx_hostile) / sizeof(fx_hostile[0]), len;
	uint64_t root = fx_code(fx, "<module>]]>", "/srv/<x>.py", 1);
	char *svg;

	(void)state;
	prctl(PR_SET_NAME, "<t>]]>&\"", 0, 0, 0);
	for (size_t i = 0; i < n; i++)
		fx_sample(fx, 0, (uint64_t[]){ root, fx_code(fx, fx_hostile[i], "/f<;>.py", 9) }, 2,
			  i + 1);
	fx_sample(fx, 0, (uint64_t[]){ root, fx_code(fx, "nonchar\xef\xbf\xbe", "/f.py", 1) }, 2,
		  1);
	svg = fx_write(fx, out_svg_write, &len);
	assert_non_null(svg);
	/* one script (ours), one CDATA end (its own), one comment (the header) */
	assert_int_equal(count(svg, "<script"), 1);
	assert_int_equal(count(svg, "]]>"), 1);
	assert_int_equal(count(svg, "<!--"), 1);
	assert_null(strstr(svg, "<b>"));
	assert_null(strstr(svg, "\xef\xbf\xbe"));
	assert_non_null(strstr(svg, "<title>&lt;/script&gt;&lt;script&gt;window.__pwned=1"
				    "&lt;/script&gt; (/f&lt;;&gt;.py:9)\n"));
	assert_non_null(strstr(svg, "&lt;module&gt;]]&gt; (/srv/&lt;x&gt;.py:1)"));
	assert_non_null(strstr(svg, "ctl\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end"));
	free(svg);
	fx_free(fx);
}

/* A profile with many stacks, shared prefixes and one function at several lines, as
 * pair.svg and pair.folded for the e2e comparison (skipped without $PYWALK_SVG_PAIR). */
static void test_svg_pair_for_e2e(void **state)
{
	const char *dir = getenv("PYWALK_SVG_PAIR");
	struct fx *fx;
	uint64_t codes[6][3], stack[6];
	uint32_t rng = 7;
	char name[64], path[4096];
	int (*writers[2])(FILE *, const struct profile *) = { out_svg_write, out_folded_write };
	const char *names[2] = { "pair.svg", "pair.folded" };

	(void)state;
	if (!dir)
		skip();
	fx = fx_new(&(struct profile_opts){ 0 }, "python3");
	for (int l = 0; l < 6; l++)
		for (int k = 0; k < 3; k++) {
			snprintf(name, sizeof(name), "level%d.fn_%d", l, k % 2);
			codes[l][k] = fx_code(fx, name, "/srv/app.py", 10 * l + k);
		}
	for (int i = 0; i < 400; i++) {
		uint32_t depth = 1 + (rng = rng * 1103515245 + 12345) % 6;

		for (uint32_t d = 0; d < depth; d++)
			stack[d] = codes[d][(rng = rng * 1103515245 + 12345) >> 16 & 1 ? 2 : d % 3];
		fx_sample(fx, 0, stack, depth, 1 + (rng >> 20) % 9);
	}
	for (int i = 0; i < 2; i++) {
		size_t len;
		char *out = fx_write(fx, writers[i], &len);
		FILE *f;

		assert_non_null(out);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(out, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
		free(out);
	}
	fx_free(fx);
}

/* --function: the boxes of one function called from several lines of its caller are one box
 * holding their samples; by line they are siblings. */
static void test_svg_by_function_merges_sibling_boxes(void **state)
{
	(void)state;
	for (int by_function = 0; by_function < 2; by_function++) {
		struct fx *fx = fx_new(&(struct profile_opts){ .by_function = by_function }, "p");
		uint64_t m = fx_code(fx, "main", "/app.py", 1), pub[3];
		size_t len;
		char *svg;

		for (int i = 0; i < 3; i++) {
			pub[i] = fx_code(fx, "Publisher.publish", "/app.py", 10 + i);
			fx_sample(fx, 0, (uint64_t[]){ m, pub[i] }, 2, 5);
		}
		svg = fx_write(fx, out_svg_write, &len);
		assert_non_null(svg);
		assert_int_equal(count(svg, "<title>Publisher.publish ("), by_function ? 1 : 3);
		if (by_function)
			assert_non_null(strstr(svg, "<title>Publisher.publish (/app.py:10)\n"
						    "15 samples (100.00%)</title>"));
		free(svg);
		fx_free(fx);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svg_flame_graph_boxes_and_tooltips),
		cmocka_unit_test(test_svg_leaves_out_thin_boxes),
		cmocka_unit_test(test_svg_hostile_names_stay_text),
		cmocka_unit_test(test_svg_by_function_merges_sibling_boxes),
		cmocka_unit_test(test_svg_pair_for_e2e),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
