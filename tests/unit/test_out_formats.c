// SPDX-License-Identifier: MIT
/* Unit tests for user/output/out.c: format selection by -f name and by output file name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "output/out.h"

static const char *by_path(const char *path)
{
	const struct out_writer *w = out_by_path(path);

	return w ? w->name : NULL;
}

/* What record and trace write: --format first, then the path's extension, then folded. */
static void test_writer_choice(void **state)
{
	(void)state;
	assert_string_equal(out_choose("pprof", "x.svg")->name, "pprof");
	assert_string_equal(out_choose(NULL, "x.svg")->name, "svg");
	assert_string_equal(out_choose(NULL, "x.speedscope.json")->name, "speedscope");
	assert_string_equal(out_choose(NULL, "x")->name, "folded");
	assert_string_equal(out_choose(NULL, NULL)->name, "folded");
	assert_string_equal(out_choose("nonsense", NULL)->name, "folded");
}

static void test_formats_by_name(void **state)
{
	(void)state;
	assert_ptr_equal(out_by_name("folded")->write, out_folded_write);
	assert_ptr_equal(out_by_name("html")->write, out_html_write);
	assert_ptr_equal(out_by_name("speedscope")->write, out_speedscope_write);
	assert_ptr_equal(out_by_name("pprof")->write, out_pprof_write);
	assert_ptr_equal(out_by_name("svg")->write, out_svg_write);
	assert_null(out_by_name("bogus"));
	assert_null(out_by_name(""));
	assert_string_equal(out_names(), "folded, html, svg, speedscope, timeline, pprof");
}

static void test_formats_by_extension(void **state)
{
	(void)state;
	assert_string_equal(by_path("out.folded"), "folded");
	assert_string_equal(by_path("out.txt"), "folded");
	assert_string_equal(by_path("out.collapsed"), "folded");
	assert_string_equal(by_path("/tmp/x/out.html"), "html");
	assert_string_equal(by_path("out.htm"), "html");
	assert_string_equal(by_path("out.speedscope.json"), "speedscope");
	assert_string_equal(by_path("out.json"), "speedscope");
	assert_string_equal(by_path("out.timeline.json"), "timeline");
	assert_true(out_by_name("timeline")->timeline);
	assert_false(out_by_name("speedscope")->timeline);
	assert_string_equal(by_path("out.pb.gz"), "pprof");
	assert_string_equal(by_path("cpu.pprof"), "pprof");
	assert_string_equal(by_path("flame.svg"), "svg");
	assert_string_equal(by_path("OUT.HTML"), "html"); /* case does not matter */
}

static void test_formats_unknown_or_misleading_paths(void **state)
{
	(void)state;
	assert_null(by_path("out"));
	assert_null(by_path("out.gz"));	      /* gzip of what? */
	assert_null(by_path(".json"));	      /* a hidden file, not an extension */
	assert_null(by_path("dir.html/out")); /* a directory's name says nothing */
	assert_null(by_path("out.html/"));
	assert_null(by_path(""));
	/* an extension pywalk does not know is an error, no extension means folded */
	assert_true(out_path_has_extension("out.gz"));
	assert_true(out_path_has_extension("/tmp/a.b/out.x"));
	assert_false(out_path_has_extension("out"));
	assert_false(out_path_has_extension("/tmp/a.b/out"));
	assert_false(out_path_has_extension(".hidden"));
	assert_false(out_path_has_extension("/dev/stdout"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats_by_name),
		cmocka_unit_test(test_writer_choice),
		cmocka_unit_test(test_formats_by_extension),
		cmocka_unit_test(test_formats_unknown_or_misleading_paths),
	};

	return cmocka_run_group_tests_name("out_formats", tests, NULL, NULL);
}
