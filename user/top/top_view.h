/* SPDX-License-Identifier: MIT */
/* The terminal side of `pywalk top`: ncurses setup and teardown, the header, the ranked
 * table and the key line. Every string from a target is drawn through top_view_text(), which
 * escapes control characters, so a hostile name cannot move the cursor or inject escapes.
 * Ranking lives in top_model; this file decides nothing about the numbers. */
#ifndef PW_TOP_VIEW_H
#define PW_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "top/top_model.h"

/* Widest screen drawn; a wider terminal gets blank columns on the right. */
#define TOP_VIEW_MAX_COLS 512

/* Which columns fit a terminal `cols` wide. The own% column and the function are always
 * shown; the others go as the terminal narrows: file, then the sample counts, then the
 * process (when rows are per process: which process matters more than raw counts), then
 * total%. `proc_want` is 0 when rows are not per process, else the columns the widest
 * process label takes: the process column gets them when they fit in two fifths of what
 * the fixed columns leave, else those (never below what keeps the PID readable). */
struct top_layout {
	bool total_pct, samples, process, file;
	bool ns; /* counts are nanoseconds (--mode off-cpu, wall): shown as times */
	int proc_cols, func_cols, file_cols; /* 0 when the column is not shown */
};

void top_view_layout(int cols, int proc_want, struct top_layout *l);

/* Render untrusted text `in` for the terminal into `out` (always terminated), at most
 * `max_cols` columns: newline, tab, backslash and other control bytes become \n, \t, \\,
 * \xNN; invalid UTF-8 bytes \xNN; C1 controls, zero-width and non-printable characters
 * \uXXXX (\UXXXXXXXX above U+FFFF), and every non-ASCII character too unless `utf8` (the
 * terminal's locale is UTF-8). Text that does not fit is cut at the end, or at the start
 * when `keep_tail` (file paths: the name matters), and the cut is marked with one column
 * (U+2026 in UTF-8, '~' otherwise). Returns the columns used. Printable width is decided
 * with wcwidth(), so the caller must have set LC_CTYPE. */
int top_view_text(const char *in, bool utf8, int max_cols, bool keep_tail, char *out,
		  size_t out_size);

/* What the header says; the cmd fills it once per interval. */
struct top_status {
	const char *title; /* "PID 4242 (python3)": untrusted, escaped when drawn */
	double elapsed_s;  /* since sampling started */
	double rate;	   /* samples/s in the last interval (ns/s when ns) */
	bool ns;	   /* counts are nanoseconds (--mode off-cpu, wall) */
	double interval_s;
	uint64_t samples; /* in the window shown */
	uint64_t shipped, rejected, lost, empty, no_tstate;
	const char *worst_label; /* biggest reject reason, shown when rejected > 0 */
	uint64_t worst;
	uint64_t not_counted; /* shipped stacks userspace could not count */
	bool cumulative, reverse;
	bool processes; /* rows are per process: a PROCESS column, and P sorts by it */
	enum top_sort sort;
	const char *message; /* shown in the key line instead of the keys, or NULL */
};

struct top_view;

/* Take over the terminal on stdout (keys from stdin, or /dev/tty when stdin is not a
 * terminal). NULL with errno and a sentence in `why` when the terminal cannot be used. */
struct top_view *top_view__new(char *why, size_t why_size);
/* Restore the terminal. NULL is a no-op. */
void top_view__free(struct top_view *v);

/* Next key, waiting up to timeout_ms (0 = do not wait); -1 when none. KEY_RESIZE is
 * returned after the terminal changed size (the next draw uses the new size). */
int top_view__key(struct top_view *v, int timeout_ms);
/* Move the first row shown by `delta` rows (clamped when drawn); page = rows on screen. */
void top_view__scroll(struct top_view *v, long delta);
int top_view__page_rows(const struct top_view *v);

/* A screen line: a column holds at most 4 bytes (a wide character is at most 4 bytes for 2
 * columns, the cut mark 3 bytes for 1; escapes are 1 byte per column). */
#define TOP_VIEW_LINE_SIZE (TOP_VIEW_MAX_COLS * 4 + 64)

/* The table's heading line and row `r` as drawn in layout `l` (`samples`: all samples in
 * the view, for the percentages), terminal-free so they can be tested: every name goes
 * through top_view_text(), the process label keeping its tail (the PID) when cut. `out`
 * (TOP_VIEW_LINE_SIZE bytes are enough) is always terminated. */
void top_view_format_heading(const struct top_layout *l, enum top_sort sort, char *out,
			     size_t out_size);
void top_view_format_row(const struct top_layout *l, bool utf8, const struct top_row *r,
			 uint64_t samples, const struct top_names *names, char *out,
			 size_t out_size);

/* Redraw everything. */
void top_view__draw(struct top_view *v, const struct top_status *st, const struct top_row *rows,
		    size_t nrows, const struct top_names *names);

#endif
