// SPDX-License-Identifier: MIT
/* Unit tests for the terminal-free parts of user/top/top_view.c: escaping of hostile names
 * (no control byte may reach the terminal), cutting to a column budget, which columns fit
 * a terminal of a given width, and the heading and rows as they are drawn, with the process
 * column when rows are per process. No terminal is opened. */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/escape.h"
#include "top/top_view.h"

#define ELLIPSIS "\xe2\x80\xa6"

static int setup_utf8(void **state)
{
	(void)state;
	/* wcwidth() follows LC_CTYPE; C.UTF-8 is always there on Debian */
	return setlocale(LC_CTYPE, "C.UTF-8") ? 0 : -1;
}

/* Render `in` into a fresh buffer; *cols gets the columns used. */
static const char *text(const char *in, bool utf8, int max_cols, bool keep_tail, int *cols)
{
	static char out[1024];

	*cols = top_view_text(in, utf8, max_cols, keep_tail, out, sizeof(out));
	return out;
}

static void assert_text(const char *in, bool utf8, int max_cols, bool keep_tail, const char *want,
			int want_cols)
{
	int cols;

	assert_string_equal(text(in, utf8, max_cols, keep_tail, &cols), want);
	assert_int_equal(cols, want_cols);
}

static void test_top_view_plain_ascii_is_unchanged(void **state)
{
	(void)state;
	assert_text("main", false, 80, false, "main", 4);
	assert_text("Outer.<locals>.inner", true, 80, false, "Outer.<locals>.inner", 20);
	assert_text("", true, 80, false, "", 0);
}

static void test_top_view_control_bytes_are_escaped(void **state)
{
	(void)state;
	assert_text("\x1b[2J", false, 80, false, "\\x1b[2J", 7);
	assert_text("a\nb\tc\\d\x7f", true, 80, false, "a\\nb\\tc\\\\d\\x7f", 14);
	assert_text("\x1b]2;PWNED\x07", true, 80, false, "\\x1b]2;PWNED\\x07", 16);
	assert_text("\r", true, 80, false, "\\x0d", 4);
}

static void test_top_view_c1_bidi_and_zero_width_are_escaped_in_utf8(void **state)
{
	(void)state;
	assert_text("\xc2\x9b"
		    "31m",
		    true, 80, false, "\\u009b31m", 9);
	assert_text("x\xe2\x80\xae"
		    "y",
		    true, 80, false, "x\\u202ey", 8);
	assert_text("x\xe2\x80\x8b"
		    "y",
		    true, 80, false, "x\\u200by", 8);
	assert_text("\xf3\xa0\x80\x81", true, 80, false, "\\U000e0001", 10);
}

/* The view escapes exactly what the other outputs escape: every non-ASCII code point of
 * the shared list, including those the locale gives a width (soft hyphen, Hangul filler) */
static void test_top_view_escapes_every_code_point_of_the_shared_list(void **state)
{
	char in[8], want[16];
	size_t checked = 0;

	(void)state;
	for (size_t i = 0; i < escape_unsafe_nranges; i++) {
		for (uint32_t cp = escape_unsafe_ranges[i].first;
		     cp <= escape_unsafe_ranges[i].last; cp++) {
			if (cp < 0x80)
				continue; /* ASCII controls: \xNN, tested above */
			/* UTF-8 of cp */
			if (cp < 0x800)
				snprintf(in, sizeof(in), "%c%c", 0xc0 | cp >> 6,
					 0x80 | (cp & 0x3f));
			else if (cp < 0x10000)
				snprintf(in, sizeof(in), "%c%c%c", 0xe0 | cp >> 12,
					 0x80 | (cp >> 6 & 0x3f), 0x80 | (cp & 0x3f));
			else
				snprintf(in, sizeof(in), "%c%c%c%c", 0xf0 | cp >> 18,
					 0x80 | (cp >> 12 & 0x3f), 0x80 | (cp >> 6 & 0x3f),
					 0x80 | (cp & 0x3f));
			snprintf(want, sizeof(want), cp <= 0xffff ? "\\u%04x" : "\\U%08x", cp);
			assert_text(in, true, 80, false, want, (int)strlen(want));
			checked++;
		}
	}
	assert_true(checked > 100);
	assert_text("soft\xc2\xad"
		    "hyphen",
		    true, 80, false, "soft\\u00adhyphen", 16);
	assert_text("\xe3\x85\xa4", true, 80, false, "\\u3164", 6);
	assert_text("\xe2\x81\xa6"
		    "x\xe2\x81\xa9",
		    true, 80, false, "\\u2066x\\u2069", 13);
	assert_text("\xef\xbb\xbf"
		    "bom",
		    true, 80, false, "\\ufeffbom", 9);
}

static void test_top_view_nul_in_internal_form_is_shown_as_x00(void **state)
{
	(void)state;
	assert_text("nul" ESCAPE_NUL "after", true, 80, false, "nul\\x00after", 12);
	assert_text("nul" ESCAPE_NUL "after", false, 80, false, "nul\\x00after", 12);
}

static void test_top_view_printable_unicode_passes_only_in_utf8(void **state)
{
	(void)state;
	assert_text("caf\xc3\xa9", true, 80, false, "caf\xc3\xa9", 4);
	assert_text("caf\xc3\xa9", false, 80, false, "caf\\u00e9", 9);
	/* a wide character takes two columns */
	assert_text("\xe6\xbc\xa2x", true, 80, false, "\xe6\xbc\xa2x", 3);
}

static void test_top_view_invalid_utf8_bytes_are_escaped(void **state)
{
	(void)state;
	assert_text("a\xff"
		    "b",
		    true, 80, false, "a\\xffb", 6);
	/* overlong '/', a surrogate, and a sequence cut short by the terminator */
	assert_text("\xc0\xaf", true, 80, false, "\\xc0\\xaf", 8);
	assert_text("\xed\xa0\x80", true, 80, false, "\\xed\\xa0\\x80", 12);
	assert_text("x\xe2\x82", true, 80, false, "x\\xe2\\x82", 9);
}

static void test_top_view_long_text_is_cut_at_the_end_with_a_mark(void **state)
{
	(void)state;
	assert_text("abcdefgh", false, 5, false, "abcd~", 5);
	assert_text("abcdefgh", true, 5, false, "abcd" ELLIPSIS, 5);
	assert_text("abcde", true, 5, false, "abcde", 5);
	/* an escape is never split: it goes whole or not at all */
	assert_text("ab\x1b", false, 5, false, "ab~", 3);
	/* a wide character that would straddle the budget is left out */
	assert_text("\xe6\xbc\xa2\xe6\xbc\xa2\xe6\xbc\xa2", true, 4, false, "\xe6\xbc\xa2" ELLIPSIS,
		    3);
	assert_text("abc", true, 1, false, ELLIPSIS, 1);
	assert_text("abc", true, 0, false, "", 0);
}

static void test_top_view_paths_keep_their_tail(void **state)
{
	(void)state;
	assert_text("/very/long/path.py", false, 8, true, "~path.py", 8);
	assert_text("/very/long/path.py", true, 8, true, ELLIPSIS "path.py", 8);
	assert_text("/a.py", true, 8, true, "/a.py", 5);
	assert_text("/x/\x1b[2J.py", false, 9, true, "~[2J.py", 7);
}

static void test_top_view_small_buffer_is_never_overrun(void **state)
{
	char out[8];
	int cols;

	(void)state;
	memset(out, 'X', sizeof(out));
	cols = top_view_text("\x1b\x1b\x1b\x1b\x1b", false, 80, false, out, 6);
	assert_string_equal(out, "\\x1b");
	assert_int_equal(cols, 4);
	assert_int_equal(out[6], 'X');
	assert_int_equal(top_view_text("abc", false, 80, false, out, 0), 0);
}

/* Random bytes, both modes, many widths: no byte below 0x20 or DEL ever comes out, no
 * ESC in particular, and in ASCII mode the width is the length and fits the budget. */
static void test_top_view_random_input_never_emits_control_bytes(void **state)
{
	char in[64], out[512];

	(void)state;
	srand(12345);
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % (sizeof(in) - 1));
		int max_cols = rand() % 40, cols;
		bool utf8 = rand() & 1, keep_tail = rand() & 1;

		for (size_t i = 0; i < n; i++)
			in[i] = (char)(1 + rand() % 255);
		in[n] = 0;
		cols = top_view_text(in, utf8, max_cols, keep_tail, out, sizeof(out));
		assert_true(cols >= 0 && cols <= max_cols);
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			assert_true(*p >= 0x20 && *p != 0x7f);
		/* C1 controls never pass as UTF-8 (0xc2 0x80..0x9f) */
		assert_null(strstr(out, "\xc2\x9b"));
		if (!utf8) {
			for (const unsigned char *p = (const unsigned char *)out; *p; p++)
				assert_true(*p < 0x80);
			assert_int_equal((int)strlen(out), cols);
		}
	}
}

static int row_width(const struct top_layout *l)
{
	/* own% 6, total% 8, two counts of 8, gap 2, process and gap 2, function, ' ' and file */
	return 6 + (l->total_pct ? 8 : 0) + (l->samples ? 16 : 0) + 2 +
	       (l->process ? l->proc_cols + 2 : 0) + l->func_cols +
	       (l->file ? 1 + l->file_cols : 0);
}

static void test_top_view_layout_drops_columns_as_the_terminal_narrows(void **state)
{
	struct top_layout l;

	(void)state;
	top_view_layout(120, 0, &l);
	assert_true(l.total_pct && l.samples && l.file);
	assert_int_equal(row_width(&l), 120);

	top_view_layout(80, 0, &l);
	assert_true(l.total_pct && l.samples && l.file);
	assert_true(l.func_cols >= 20 && l.file_cols >= 20);

	top_view_layout(60, 0, &l);
	assert_true(l.total_pct && l.samples && !l.file);

	top_view_layout(40, 0, &l);
	assert_true(l.total_pct && !l.samples && !l.file);

	top_view_layout(20, 0, &l);
	assert_true(!l.total_pct && !l.samples && !l.file);
	assert_int_equal(l.func_cols, 12);

	for (int cols = 20; cols <= TOP_VIEW_MAX_COLS; cols++) {
		top_view_layout(cols, 0, &l);
		assert_true(l.func_cols >= 1);
		assert_false(l.process);
		assert_int_equal(l.proc_cols, 0);
		assert_int_equal(row_width(&l), cols);
	}
}

/* "python3.11 (4242)" is 17 columns: the widest label of a typical --all */
#define LABEL_COLS 17

static void test_top_view_layout_process_column_goes_before_the_function(void **state)
{
	static const int wants[] = { 8, LABEL_COLS, 44, TOP_VIEW_MAX_COLS };
	struct top_layout l, narrower;

	(void)state;
	top_view_layout(120, LABEL_COLS, &l);
	assert_true(l.total_pct && l.samples && l.process && l.file);
	assert_int_equal(l.proc_cols, LABEL_COLS);
	assert_true(l.func_cols >= 20 && l.file_cols >= 20);
	assert_int_equal(row_width(&l), 120);

	/* 80 columns: the file goes first, the whole label stays */
	top_view_layout(80, LABEL_COLS, &l);
	assert_true(l.total_pct && l.samples && l.process && !l.file);
	assert_int_equal(l.proc_cols, LABEL_COLS);

	/* then the counts, before the process */
	top_view_layout(60, LABEL_COLS, &l);
	assert_true(l.total_pct && !l.samples && l.process && !l.file);
	assert_true(l.proc_cols >= 12 && l.func_cols >= 12);

	/* 40 columns: the process is gone, the function is there */
	top_view_layout(40, LABEL_COLS, &l);
	assert_true(l.total_pct && !l.samples && !l.process && !l.file);
	assert_int_equal(l.proc_cols, 0);
	assert_int_equal(l.func_cols, 24);

	/* a label as long as a container's: the column takes two fifths, the rest is shared */
	top_view_layout(120, 44, &l);
	assert_true(l.process && l.file);
	assert_int_equal(l.proc_cols, 35);

	for (size_t w = 0; w < sizeof(wants) / sizeof(wants[0]); w++) {
		top_view_layout(19, wants[w], &narrower);
		for (int cols = 20; cols <= TOP_VIEW_MAX_COLS; cols++) {
			top_view_layout(cols, wants[w], &l);
			assert_int_equal(row_width(&l), cols);
			assert_true(l.func_cols >= 1);
			/* never wider than the label, never so narrow the PID is cut off */
			if (l.process)
				assert_true(l.proc_cols <= wants[w] &&
					    (l.proc_cols >= 12 || l.proc_cols == wants[w]) &&
					    l.func_cols >= 12);
			/* the counts only with the process, and once shown, shown when wider */
			assert_true(!l.samples || l.process);
			assert_true(!narrower.process || l.process);
			assert_true(!narrower.file || l.file);
			narrower = l;
		}
	}
}

struct hostile_names {
	const char *process;
};

static const char *hn_name(void *ctx, uint32_t func)
{
	(void)ctx;
	(void)func;
	return "spin";
}

static const char *hn_file(void *ctx, uint32_t func)
{
	(void)ctx;
	(void)func;
	return "/srv/app.py";
}

static int hn_line(void *ctx, uint32_t func)
{
	(void)ctx;
	(void)func;
	return 14;
}

static const char *hn_process(void *ctx, uint32_t proc)
{
	(void)proc;
	return ((const struct hostile_names *)ctx)->process;
}

/* Byte offset of `needle` in `hay` (which must hold it). */
static size_t offset_of(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);

	assert_non_null(p);
	return (size_t)(p - hay);
}

static void assert_no_control_bytes(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		assert_true(*p >= 0x20 && *p != 0x7f);
}

static void test_top_view_process_column_is_drawn_escaped(void **state)
{
	/* a comm that tries to clear the screen, set the title and break the line */
	struct hostile_names hn = { .process = "py\n\x1b[2J\x1b]0;pwned\x07\xc2\x9bthon (4242)" };
	const struct top_names names = {
		.name = hn_name, .file = hn_file, .line = hn_line, .process = hn_process, .ctx = &hn
	};
	const struct top_row row = { .proc = 3, .func = 1, .own = 25, .total = 50 };
	char head[TOP_VIEW_LINE_SIZE], line[TOP_VIEW_LINE_SIZE];
	struct top_layout l;

	(void)state;
	top_view_layout(200, 60, &l);
	assert_true(l.process);
	top_view_format_heading(&l, TOP_SORT_PROCESS, head, sizeof(head));
	top_view_format_row(&l, true, &row, 100, &names, line, sizeof(line));
	assert_no_control_bytes(line);
	assert_non_null(strstr(line, "py\\n\\x1b[2J\\x1b]0;pwned\\x07\\u009bthon (4242)"));
	assert_non_null(strstr(line, " spin "));
	assert_non_null(strstr(line, "/srv/app.py:14"));
	/* the columns line up with their headings */
	assert_non_null(strstr(head, "*PROCESS"));
	assert_int_equal(offset_of(head, "*PROCESS"), offset_of(line, "py\\n"));
	assert_int_equal(offset_of(head, "FUNCTION"), offset_of(line, "spin"));
	assert_true(strlen(line) <= 200);

	/* cut to the column, the label keeps its end: the PID */
	top_view_layout(60, 60, &l);
	assert_true(l.process && l.proc_cols < 40);
	top_view_format_heading(&l, TOP_SORT_OWN, head, sizeof(head));
	top_view_format_row(&l, false, &row, 100, &names, line, sizeof(line));
	assert_no_control_bytes(line);
	assert_non_null(strstr(line, "~"));
	assert_non_null(strstr(line, "thon (4242) "));
	assert_null(strstr(head, "*PROCESS"));
	assert_int_equal(offset_of(head, "PROCESS"), offset_of(line, "~"));
	assert_int_equal(offset_of(head, "FUNCTION"), offset_of(line, "spin"));

	/* narrow: no process column, no trace of the label, the function stays */
	top_view_layout(40, 60, &l);
	top_view_format_heading(&l, TOP_SORT_PROCESS, head, sizeof(head));
	top_view_format_row(&l, true, &row, 100, &names, line, sizeof(line));
	assert_null(strstr(head, "PROCESS"));
	assert_non_null(strstr(head, "FUNCTION"));
	assert_null(strstr(line, "4242"));
	assert_int_equal(offset_of(head, "FUNCTION"), offset_of(line, "spin"));
}

static void test_top_view_rows_without_processes_have_no_process_column(void **state)
{
	const struct top_names names = { .name = hn_name, .file = hn_file, .line = hn_line };
	const struct top_row row = { .func = 1, .own = 1, .total = 4 };
	char head[TOP_VIEW_LINE_SIZE], line[TOP_VIEW_LINE_SIZE];
	struct top_layout l;

	(void)state;
	top_view_layout(120, 0, &l);
	top_view_format_heading(&l, TOP_SORT_NAME, head, sizeof(head));
	top_view_format_row(&l, true, &row, 8, &names, line, sizeof(line));
	assert_null(strstr(head, "PROCESS"));
	assert_non_null(strstr(head, "*FUNCTION"));
	/* "  12.5    50.0       1       4  spin" */
	assert_int_equal(offset_of(line, "12.5"), 2);
	assert_int_equal(offset_of(line, "50.0"), 10);
	assert_int_equal(offset_of(head, "*FUNCTION"), offset_of(line, "spin"));
	assert_int_equal(offset_of(line, "spin"), 32);
	assert_true(strlen(line) <= 120);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_view_plain_ascii_is_unchanged),
		cmocka_unit_test(test_top_view_control_bytes_are_escaped),
		cmocka_unit_test(test_top_view_c1_bidi_and_zero_width_are_escaped_in_utf8),
		cmocka_unit_test(test_top_view_escapes_every_code_point_of_the_shared_list),
		cmocka_unit_test(test_top_view_nul_in_internal_form_is_shown_as_x00),
		cmocka_unit_test(test_top_view_printable_unicode_passes_only_in_utf8),
		cmocka_unit_test(test_top_view_invalid_utf8_bytes_are_escaped),
		cmocka_unit_test(test_top_view_long_text_is_cut_at_the_end_with_a_mark),
		cmocka_unit_test(test_top_view_paths_keep_their_tail),
		cmocka_unit_test(test_top_view_small_buffer_is_never_overrun),
		cmocka_unit_test(test_top_view_random_input_never_emits_control_bytes),
		cmocka_unit_test(test_top_view_layout_drops_columns_as_the_terminal_narrows),
		cmocka_unit_test(test_top_view_layout_process_column_goes_before_the_function),
		cmocka_unit_test(test_top_view_process_column_is_drawn_escaped),
		cmocka_unit_test(test_top_view_rows_without_processes_have_no_process_column),
	};

	return cmocka_run_group_tests(tests, setup_utf8, NULL);
}
