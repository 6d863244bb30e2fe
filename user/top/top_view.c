// SPDX-License-Identifier: MIT
/* ncurses drawing for `pywalk top`. Each line is built in a buffer from escaped text and
 * written with one call, so a name can never place the cursor or emit a byte the terminal
 * would act on. Layout and escaping are plain functions (unit-tested); the rest only runs
 * on a terminal. */
#define _GNU_SOURCE
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <curses.h>

#include "lib/escape.h"
#include "top/top_view.h"

#define LINE_SIZE TOP_VIEW_LINE_SIZE

/* Fixed column widths, each with its leading spaces. */
#define W_OWN_PCT 6
#define W_TOTAL_PCT 8
#define W_COUNT 8
#define W_GAP 2
/* The process column: a label is cut at its start, so 12 columns still show the PID of
 * "python3.11 (4194304)" after the cut mark; the function keeps as many beside it. */
#define W_PROC_MIN 12
#define W_FUNC_MIN 12
#define PROC_HEADING "PROCESS"
/* Narrowest terminal the table is drawn in, and fewest lines (header 4, a row, keys). */
#define MIN_COLS 20
#define MIN_LINES 6
#define HEADER_LINES 4

#define CUT_MARK_UTF8 "\xe2\x80\xa6" /* U+2026 HORIZONTAL ELLIPSIS */

struct top_view {
	SCREEN *scr;
	FILE *tty_in; /* /dev/tty when stdin is not a terminal, else NULL */
	bool utf8;
	long first; /* index of the first row shown */
	int page_rows;
	int proc_want; /* widest process label drawn so far: the column only grows */
};

void top_view_layout(int cols, int proc_want, struct top_layout *l)
{
	int rest;

	*l = (struct top_layout){ 0 };
	l->total_pct = cols >= W_OWN_PCT + W_TOTAL_PCT + W_GAP + 12;
	rest = cols - W_OWN_PCT - W_GAP - (l->total_pct ? W_TOTAL_PCT : 0);
	/* the process is kept longer than the counts, and goes before the function */
	l->process = proc_want > 0 && rest >= W_PROC_MIN + W_GAP + W_FUNC_MIN;
	l->samples = rest - (l->process ? W_PROC_MIN + W_GAP : 0) >= 2 * W_COUNT + 20;
	if (l->samples)
		rest -= 2 * W_COUNT;
	if (l->process) {
		/* up to two fifths: "python3.11 (4242)" whole beside a 30-column function at
		 * 80 columns */
		l->proc_cols = rest * 2 / 5 > W_PROC_MIN ? rest * 2 / 5 : W_PROC_MIN;
		if (proc_want < l->proc_cols)
			l->proc_cols = proc_want;
		/* two spaces after it: a label has spaces of its own */
		rest -= l->proc_cols + W_GAP;
	}
	if (rest < 1)
		rest = 1;
	/* below 40 columns the function name needs all of them; above, paths are the longer
	 * strings but qualnames the more useful, so they share evenly */
	l->file = rest >= 40;
	l->file_cols = l->file ? rest / 2 : 0;
	l->func_cols = l->file ? rest - l->file_cols - 1 : rest;
}

/* One screen cell group: a printable character as is, or the escape standing for it. */
struct cell {
	char text[12];
	int len, cols;
};

static void next_cell(const char **s, bool utf8, struct cell *c)
{
	const unsigned char *p = (const unsigned char *)*s;
	uint32_t cp;
	int n = (int)escape_utf8_next(*s, &cp), w;

	if (!n) {
		c->len = c->cols = snprintf(c->text, sizeof(c->text), "\\x%02x", p[0]);
		*s += 1;
		return;
	}
	*s += n;
	if (cp < 0x80) {
		if (cp == '\n' || cp == '\t' || cp == '\\')
			c->len = snprintf(c->text, sizeof(c->text), "\\%c",
					  cp == '\n'   ? 'n'
					  : cp == '\t' ? 't'
						       : '\\');
		else if (cp < 0x20 || cp == 0x7f) /* U+0000 too, stored as ESCAPE_NUL */
			c->len = snprintf(c->text, sizeof(c->text), "\\x%02x", cp);
		else
			c->text[0] = (char)cp, c->len = 1;
		c->cols = c->len;
		return;
	}
	/* the shared list (C1 controls, U+009B being CSI; bidi controls; characters that draw
	 * nothing) never passes, and of the rest only what takes 1 or 2 columns */
	w = utf8 && !escape_unsafe(cp) ? wcwidth((wchar_t)cp) : -1;
	if (w == 1 || w == 2) {
		memcpy(c->text, p, n);
		c->len = n;
		c->cols = w;
		return;
	}
	c->len = c->cols =
		snprintf(c->text, sizeof(c->text), cp <= 0xffff ? "\\u%04x" : "\\U%08x", cp);
}

static bool append(char *out, size_t out_size, size_t *len, const char *s, int n)
{
	if (*len + n + 1 > out_size)
		return false;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = 0;
	return true;
}

int top_view_text(const char *in, bool utf8, int max_cols, bool keep_tail, char *out,
		  size_t out_size)
{
	const char *mark = utf8 ? CUT_MARK_UTF8 : "~";
	int total = 0, used = 0, skip = 0;
	size_t len = 0;
	struct cell c;
	bool fits;

	if (!out_size)
		return 0;
	out[0] = 0;
	if (max_cols <= 0)
		return 0;
	for (const char *s = in; *s;) {
		next_cell(&s, utf8, &c);
		total += c.cols;
	}
	fits = total <= max_cols;
	if (!fits && keep_tail) {
		/* leave out leading cells until the tail fits beside the mark */
		skip = total - (max_cols - 1);
		if (append(out, out_size, &len, mark, strlen(mark)))
			used = 1;
	}
	for (const char *s = in; *s;) {
		next_cell(&s, utf8, &c);
		if (skip > 0) {
			skip -= c.cols;
			continue;
		}
		if (used + c.cols > max_cols - (fits || keep_tail ? 0 : 1))
			break;
		if (!append(out, out_size, &len, c.text, c.len))
			break;
		used += c.cols;
	}
	if (!fits && !keep_tail && append(out, out_size, &len, mark, strlen(mark)))
		used++;
	return used;
}

struct top_view *top_view__new(char *why, size_t why_size)
{
	struct top_view *v = calloc(1, sizeof(*v));
	const char *term = getenv("TERM");

	if (!v) {
		snprintf(why, why_size, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	/* keys come from the terminal even when stdin was redirected */
	if (!isatty(STDIN_FILENO))
		v->tty_in = fopen("/dev/tty", "r");
	/* newterm, not initscr: initscr exits the program when the terminal is unusable */
	v->scr = newterm(NULL, stdout, v->tty_in ? v->tty_in : stdin);
	if (!v->scr) {
		snprintf(why, why_size,
			 "cannot drive the terminal (TERM=%s): unknown terminal type; set TERM, "
			 "e.g. TERM=xterm-256color",
			 term ? term : "unset");
		if (v->tty_in)
			fclose(v->tty_in);
		free(v);
		errno = ENOTTY;
		return NULL;
	}
	v->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	cbreak(); /* not raw(): Ctrl-C stays SIGINT, which the command handles */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	return v;
}

void top_view__free(struct top_view *v)
{
	if (!v)
		return;
	endwin();
	delscreen(v->scr);
	if (v->tty_in)
		fclose(v->tty_in);
	free(v);
}

int top_view__key(struct top_view *v, int timeout_ms)
{
	int ch;

	(void)v;
	wtimeout(stdscr, timeout_ms);
	ch = wgetch(stdscr);
	return ch == ERR ? -1 : ch;
}

void top_view__scroll(struct top_view *v, long delta)
{
	/* no overflow for "to the top" (-LONG_MAX) or "to the end" (LONG_MAX) */
	if (delta < 0)
		v->first = -delta >= v->first ? 0 : v->first + delta;
	else
		v->first = delta >= LONG_MAX - v->first ? LONG_MAX : v->first + delta;
}

int top_view__page_rows(const struct top_view *v)
{
	return v->page_rows > 0 ? v->page_rows : 1;
}

/* Draw escaped text as line y, padded (so attributes cover the line) and clipped to cols. */
static void put_line(const struct top_view *v, int y, int cols, const char *raw, int attr)
{
	char text[LINE_SIZE];
	int used = top_view_text(raw, v->utf8, cols, false, text, sizeof(text));

	attron(attr);
	mvaddstr(y, 0, text);
	for (; used < cols; used++)
		addch(' ');
	attroff(attr);
}

/* Sample count in `width` columns: exact while it fits, then in thousands or millions. */
/* A duration in ns in `width` columns: 850us, 12ms, 1.5s, 42s, 12m. */
static void format_time(char *buf, size_t size, int width, uint64_t ns)
{
	double s = (double)ns / 1e9;

	if (s >= 600)
		snprintf(buf, size, "%*.0fm", width - 1, s / 60);
	else if (s >= 10)
		snprintf(buf, size, "%*.0fs", width - 1, s);
	else if (s >= 1)
		snprintf(buf, size, "%*.1fs", width - 1, s);
	else if (ns >= 1000000)
		snprintf(buf, size, "%*.0fms", width - 2, (double)ns / 1e6);
	else
		snprintf(buf, size, "%*.0fus", width - 2, (double)ns / 1e3);
}

static void format_count(char *buf, size_t size, int width, uint64_t v)
{
	static const char suffix[] = { 0, 'k', 'M', 'G', 'T', 'P' };
	unsigned int i = 0;
	uint64_t limit = 1;

	for (int d = 0; d < width - 1; d++)
		limit *= 10; /* values below limit fit with a space before them */
	while (v >= limit && i + 1 < sizeof(suffix)) {
		v /= 1000;
		i++;
	}
	if (suffix[i])
		snprintf(buf, size, "%*llu%c", width - 1, (unsigned long long)v, suffix[i]);
	else
		snprintf(buf, size, "%*llu", width, (unsigned long long)v);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Append a column heading at raw[len], right-aligned in `width` columns (left-aligned when
 * width is negative), with a '*' before it when the table is sorted by it. New length. */
static size_t add_heading(char *raw, size_t size, size_t len, int width, const char *label,
			  bool sorted)
{
	char text[32];
	int n;

	snprintf(text, sizeof(text), "%s%s", sorted ? "*" : "", label);
	n = snprintf(raw + len, size - len, "%*s", width, text);
	return n > 0 && len + n < size ? len + n : len;
}

static void draw_header(const struct top_view *v, int cols, const struct top_status *st,
			const struct top_layout *l)
{
	static const char *const sort_names[] = {
		[TOP_SORT_OWN] = "own",
		[TOP_SORT_TOTAL] = "total",
		[TOP_SORT_NAME] = "name",
		[TOP_SORT_PROCESS] = "process",
	};
	char raw[1024], rej[128] = "", extra[64] = "";
	unsigned long up = (unsigned long)st->elapsed_s;

	if (st->ns)
		/* seconds counted per second: how many threads wait (off-cpu), on average */
		snprintf(raw, sizeof(raw),
			 "pywalk top - %s - up %lu:%02lu:%02lu - %.2f s counted/s - every %.1f s",
			 st->title, up / 3600, up / 60 % 60, up % 60, st->rate / 1e9,
			 st->interval_s);
	else
		snprintf(raw, sizeof(raw),
			 "pywalk top - %s - up %lu:%02lu:%02lu - %.1f samples/s - every %.1f s",
			 st->title, up / 3600, up / 60 % 60, up % 60, st->rate, st->interval_s);
	put_line(v, 0, cols, raw, A_BOLD);

	if (st->rejected)
		snprintf(rej, sizeof(rej), " (%s %llu)", st->worst_label,
			 (unsigned long long)st->worst);
	if (st->not_counted)
		snprintf(extra, sizeof(extra), "  not counted %llu",
			 (unsigned long long)st->not_counted);
	snprintf(raw, sizeof(raw),
		 "shipped %llu  rejected %llu%s  lost %llu  empty %llu  no thread state %llu%s",
		 (unsigned long long)st->shipped, (unsigned long long)st->rejected, rej,
		 (unsigned long long)st->lost, (unsigned long long)st->empty,
		 (unsigned long long)st->no_tstate, extra);
	put_line(v, 1, cols, raw, A_NORMAL);

	if (st->ns)
		snprintf(raw, sizeof(raw), "view: %s, %.3f s counted - sort: %s%s",
			 st->cumulative ? "whole run" : "last interval", (double)st->samples / 1e9,
			 sort_names[st->sort], st->reverse ? ", reversed" : "");
	else
		snprintf(raw, sizeof(raw), "view: %s, %llu samples - sort: %s%s",
			 st->cumulative ? "whole run" : "last interval",
			 (unsigned long long)st->samples, sort_names[st->sort],
			 st->reverse ? ", reversed" : "");
	put_line(v, 2, cols, raw, A_NORMAL);

	top_view_format_heading(l, st->sort, raw, sizeof(raw));
	put_line(v, 3, cols, raw, A_REVERSE);
}

void top_view_format_heading(const struct top_layout *l, enum top_sort sort, char *out,
			     size_t out_size)
{
	size_t len;

	/* '*' marks the sort column(s) */
	len = add_heading(out, out_size, 0, W_OWN_PCT, "OWN%", sort == TOP_SORT_OWN);
	if (l->total_pct)
		len = add_heading(out, out_size, len, W_TOTAL_PCT, "TOTAL%",
				  sort == TOP_SORT_TOTAL);
	if (l->samples) {
		len = add_heading(out, out_size, len, W_COUNT, "OWN", sort == TOP_SORT_OWN);
		len = add_heading(out, out_size, len, W_COUNT, "TOTAL", sort == TOP_SORT_TOTAL);
	}
	len = add_heading(out, out_size, len, W_GAP, "", false);
	if (l->process) {
		len = add_heading(out, out_size, len, -l->proc_cols, PROC_HEADING,
				  sort == TOP_SORT_PROCESS);
		len = add_heading(out, out_size, len, W_GAP, "", false);
	}
	len = add_heading(out, out_size, len, -l->func_cols, "FUNCTION", sort == TOP_SORT_NAME);
	if (l->file)
		add_heading(out, out_size, len, 0, " FILE:LINE(def)", false);
}

/* Append `text`, already escaped and `used` columns wide, padded to `width` columns. */
static size_t add_cell(char *out, size_t size, size_t len, const char *text, int used, int width)
{
	int n = snprintf(out + len, size - len, "%s%*s", text, width > used ? width - used : 0, "");

	if (n < 0 || len + n >= size) {
		out[len] = 0; /* no cell cut in half */
		return len;
	}
	return len + n;
}

void top_view_format_row(const struct top_layout *l, bool utf8, const struct top_row *r,
			 uint64_t samples, const struct top_names *names, char *out,
			 size_t out_size)
{
	char text[LINE_SIZE], num[32], lineno[16];
	size_t len = 0;
	int used, room;

	if (!out_size)
		return;
	out[0] = 0;
	snprintf(num, sizeof(num), "%*.1f", W_OWN_PCT, pct(r->own, samples));
	len = add_cell(out, out_size, len, num, 0, 0);
	if (l->total_pct) {
		snprintf(num, sizeof(num), "%*.1f", W_TOTAL_PCT, pct(r->total, samples));
		len = add_cell(out, out_size, len, num, 0, 0);
	}
	if (l->samples) {
		(l->ns ? format_time : format_count)(num, sizeof(num), W_COUNT, r->own);
		len = add_cell(out, out_size, len, num, 0, 0);
		(l->ns ? format_time : format_count)(num, sizeof(num), W_COUNT, r->total);
		len = add_cell(out, out_size, len, num, 0, 0);
	}
	len = add_cell(out, out_size, len, "", 0, W_GAP);
	if (l->process) {
		/* cut at the start: the PID at the end tells apart processes of one program */
		used = top_view_text(names->process ? names->process(names->ctx, r->proc) : "?",
				     utf8, l->proc_cols, true, text, sizeof(text));
		len = add_cell(out, out_size, len, text, used, l->proc_cols + W_GAP);
	}
	used = top_view_text(names->name(names->ctx, r->func), utf8, l->func_cols, false, text,
			     sizeof(text));
	len = add_cell(out, out_size, len, text, used, l->func_cols);
	if (l->file) {
		/* the line number is ours and always shown; the path is cut at its start. A
		 * label pywalk adds ("[task NAME]", "[off-cpu: sleeping]") has neither. */
		const char *file = names->file(names->ctx, r->func);

		lineno[0] = 0;
		if (*file)
			snprintf(lineno, sizeof(lineno), ":%d", names->line(names->ctx, r->func));
		room = l->file_cols - (int)strlen(lineno);
		top_view_text(file, utf8, room, true, text, sizeof(text));
		snprintf(out + len, out_size - len, " %s%s", text, room > 0 ? lineno : "");
	}
}

static void draw_row(const struct top_view *v, int y, const struct top_layout *l,
		     const struct top_row *r, uint64_t samples, const struct top_names *names)
{
	char line[LINE_SIZE];

	top_view_format_row(l, v->utf8, r, samples, names, line, sizeof(line));
	mvaddstr(y, 0, line);
}

/* Columns of the widest process label among `rows`, never less than the heading's, and
 * never less than before: the table does not jump as processes come and go. */
static int proc_want(struct top_view *v, const struct top_row *rows, size_t nrows,
		     const struct top_names *names)
{
	char text[LINE_SIZE];
	int w;

	if (v->proc_want < (int)sizeof("*" PROC_HEADING) - 1)
		v->proc_want = (int)sizeof("*" PROC_HEADING) - 1;
	for (size_t i = 0; names->process && i < nrows; i++) {
		w = top_view_text(names->process(names->ctx, rows[i].proc), v->utf8,
				  TOP_VIEW_MAX_COLS, false, text, sizeof(text));
		if (w > v->proc_want)
			v->proc_want = w;
	}
	return v->proc_want;
}

void top_view__draw(struct top_view *v, const struct top_status *st, const struct top_row *rows,
		    size_t nrows, const struct top_names *names)
{
	int cols = COLS < TOP_VIEW_MAX_COLS ? COLS : TOP_VIEW_MAX_COLS, lines = LINES;
	const char *keys = st->message;
	struct top_layout l;

	erase();
	if (cols < MIN_COLS || lines < MIN_LINES) {
		put_line(v, 0, cols, "terminal too small", A_NORMAL);
		v->page_rows = 1;
		refresh();
		return;
	}
	top_view_layout(cols, st->processes ? proc_want(v, rows, nrows, names) : 0, &l);
	l.ns = st->ns;
	draw_header(v, cols, st, &l);

	v->page_rows = lines - HEADER_LINES - 1;
	/* keep the last page full when scrolled past the end (or the rows shrank) */
	if (v->first > (long)nrows - v->page_rows)
		v->first = (long)nrows - v->page_rows;
	if (v->first < 0)
		v->first = 0;
	for (int i = 0; i < v->page_rows && (size_t)(v->first + i) < nrows; i++)
		draw_row(v, HEADER_LINES + i, &l, &rows[v->first + i], st->samples, names);

	if (!keys)
		keys = st->processes ? "q quit  o/t/n/P sort (1-5 columns)  r reverse  "
				       "c interval/whole run  arrows scroll"
				     : "q quit  o/t/n sort (1-5 columns)  r reverse  "
				       "c interval/whole run  arrows scroll";
	put_line(v, lines - 1, cols, keys, A_REVERSE);
	refresh();
}
