// SPDX-License-Identifier: MIT
/* An SVG flame graph (root at the bottom), one self-contained file: every box is a <g> with
 * a <rect>, a label cut to fit and a <title> tooltip (full name, samples, share), so it reads
 * without JavaScript; an embedded script (user/output/assets/flame_svg.js) adds zoom and search.
 * Names go only into XML text content, escaped by escape_xml, never into attributes or the
 * script. Boxes narrower than MIN_W pixels are left out, as flamegraph.pl does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/calltree.h"
#include "lib/pywalk.h"
#include "lib/escape.h"
#include "output/out.h"
#include "lib/util.h"

#include "flame_svg_js.h" /* generated from user/output/assets/flame_svg.js: flame_svg_js[_len] */

#define WIDTH 1200
#define SIDE 10 /* margin left and right */
#define INNER_W (WIDTH - 2 * SIDE)
#define FRAME_H 16
#define PAD_TOP 44
#define PAD_BOTTOM 26
#define FONT_PX 12
#define CHAR_W 7.2 /* a 12 px monospace character, about 0.6 em */
#define MIN_W 0.1

struct svg {
	const struct calltree *t;
	uint64_t *start;  /* node -> first sample of its range, the root's being [0, total) */
	uint64_t *cursor; /* node -> where its next child starts */
	bool *drawn;
	uint32_t max_depth;
	struct strbuf label, cut, esc;
};

static double node_width(const struct svg *s, uint32_t id)
{
	uint64_t total = s->t->nodes[0].total;

	return total ? (double)s->t->nodes[id].total * INNER_W / (double)total : INNER_W;
}

/* Each node's sample range and whether it is wide enough to draw (its parent must be). */
static void lay_out(struct svg *s, const uint32_t *order)
{
	const struct calltree *t = s->t;

	for (size_t i = 0; i < t->nnodes; i++) {
		uint32_t id = order[i], parent = t->nodes[id].parent;

		if (!id) {
			s->start[0] = s->cursor[0] = 0;
			s->drawn[0] = true;
			continue;
		}
		s->start[id] = s->cursor[parent];
		s->cursor[parent] += t->nodes[id].total;
		s->cursor[id] = s->start[id];
		s->drawn[id] = s->drawn[parent] && node_width(s, id) >= MIN_W;
		if (s->drawn[id] && t->nodes[id].depth > s->max_depth)
			s->max_depth = t->nodes[id].depth;
	}
}

/* The unescaped label of a node: "name (file:line)", a root frame's label, or "all". */
static int make_label(struct svg *s, uint32_t id)
{
	const struct calltree *t = s->t;
	const struct calltree_frame *f;
	const char *name;

	strbuf_reset(&s->label);
	if (!id)
		return strbuf_add(&s->label, "all", 3);
	f = &t->frames[t->nodes[id].frame];
	name = strtab__get(t->strs, f->name);
	if (f->file == CALLTREE_NONE)
		return strbuf_add(&s->label, name, strlen(name));
	return strbuf_addf(&s->label, "%s (%s:%d)", name, strtab__get(t->strs, f->file), f->line);
}

/* The label cut to `chars` characters ("..": cut), as the script cuts it after a zoom. */
static int cut_label(struct svg *s, double width)
{
	long chars = (long)((width - 6) / CHAR_W);
	const char *p = s->label.buf;
	size_t ncp = 0, keep = 0;

	strbuf_reset(&s->cut);
	if (chars < 3)
		return 0;
	while (*p) {
		uint32_t cp;
		size_t n = escape_utf8_next(p, &cp);

		p += n ? n : 1; /* a malformed byte is one U+FFFD */
		if (++ncp == (size_t)chars - 2)
			keep = (size_t)(p - s->label.buf);
	}
	if (ncp <= (size_t)chars)
		return strbuf_add(&s->cut, s->label.buf, s->label.len);
	if (!strbuf_add(&s->cut, s->label.buf, keep))
		return strbuf_add(&s->cut, "..", 2);
	return -ENOMEM;
}

/* flamegraph.pl's "hot" palette, from a hash of the name so a function keeps its colour */
static void color(const struct svg *s, uint32_t id, char *buf, size_t size)
{
	const struct calltree *t = s->t;
	const struct calltree_frame *f;
	const char *name;
	uint64_t h;

	if (!id) {
		snprintf(buf, size, "rgb(200,200,200)");
		return;
	}
	f = &t->frames[t->nodes[id].frame];
	name = strtab__get(t->strs, f->name);
	h = hash_bytes(name, strlen(name), 0);
	if (f->kind == FRAME_KERNEL) { /* teal, as the HTML page draws them */
		snprintf(buf, size, "rgb(%u,%u,%u)", 60 + (unsigned int)(h % 30),
			 170 + (unsigned int)((h >> 8) % 40), 150 + (unsigned int)((h >> 16) % 40));
		return;
	}
	if (f->kind == FRAME_NATIVE) { /* violet */
		snprintf(buf, size, "rgb(%u,%u,%u)", 160 + (unsigned int)(h % 30),
			 130 + (unsigned int)((h >> 8) % 30), 210 + (unsigned int)((h >> 16) % 40));
		return;
	}
	if (f->file == CALLTREE_NONE) {
		snprintf(buf, size, "rgb(160,180,215)"); /* process and thread root frames */
		return;
	}
	snprintf(buf, size, "rgb(%u,%u,%u)", 205 + (unsigned int)(h % 51),
		 (unsigned int)((h >> 8) % 231), (unsigned int)((h >> 16) % 56));
}

/* "1,234 samples", or for profiles that count nanoseconds (off-CPU, wall) "12.345 ms" */
static void amount(const struct svg *s, uint64_t v, char *buf, size_t size)
{
	char count[32];

	if (profile__counts_ns(s->t->p))
		snprintf(buf, size, "%.3f ms", (double)v / 1e6);
	else
		snprintf(buf, size, "%s sample%s", fmt_count(v, count, sizeof(count)),
			 v == 1 ? "" : "s");
}

static int write_box(struct svg *s, FILE *f, uint32_t id, double height)
{
	const struct calltree_node *n = &s->t->nodes[id];
	uint64_t total = s->t->nodes[0].total;
	double w = node_width(s, id), x, y;
	char fill[32], count[48];
	int err;

	x = SIDE + (total ? (double)s->start[id] * INNER_W / (double)total : 0);
	y = height - PAD_BOTTOM - (double)(n->depth + 1) * FRAME_H;
	amount(s, n->total, count, sizeof(count));
	color(s, id, fill, sizeof(fill));
	err = make_label(s, id);
	if (!err)
		err = cut_label(s, w);
	strbuf_reset(&s->esc);
	if (!err)
		err = escape_xml(&s->esc, s->label.buf);
	if (err)
		return err;
	fprintf(f,
		"<g class=\"f\" data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>%s\n"
		"%s (%.2f%%)</title>",
		(unsigned long long)s->start[id], (unsigned long long)n->total, n->depth,
		s->esc.buf, count, total ? 100.0 * (double)n->total / (double)total : 0.0);
	strbuf_reset(&s->esc);
	err = escape_xml(&s->esc, s->cut.buf ? s->cut.buf : "");
	if (err)
		return err;
	fprintf(f,
		"<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>"
		"<text x=\"%.2f\" y=\"%.1f\">%s</text></g>\n",
		x, y, w, FRAME_H - 1, fill, x + 3, y + FRAME_H - 4.5, s->esc.buf);
	return 0;
}

static void write_head(const struct svg *s, FILE *f, double height, uint64_t total)
{
	char count[48];

	amount(s, total, count, sizeof(count));
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		"<!-- pywalk %s: flame graph, root at the bottom; click a box to zoom -->\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" data-inner-width=\"%d\" "
		"data-left=\"%d\" data-char-width=\"%.1f\">\n"
		"<style>\n"
		"text { font: %dpx monospace; fill: #000; white-space: pre; }\n"
		"g.f { cursor: pointer; }\n"
		"g.f text { pointer-events: none; }\n"
		"g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		".ui { cursor: pointer; fill: #0645ad; }\n"
		"</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#f8f8f8\"/>\n"
		"<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">"
		"pywalk flame graph (%s)</text>\n"
		"<text id=\"reset\" class=\"ui\" x=\"%d\" y=\"24\">Reset zoom</text>\n"
		"<text id=\"search\" class=\"ui\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search"
		"</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%.0f\" text-anchor=\"end\"></text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n",
		PYWALK_VERSION, WIDTH, height, WIDTH, height, INNER_W, SIDE, CHAR_W, FONT_PX, WIDTH,
		height, WIDTH / 2, count, SIDE, WIDTH - SIDE, WIDTH - SIDE, height - 8, SIDE,
		height - 8);
}

int out_svg_write(FILE *f, const struct profile *p)
{
	struct calltree t = { 0 };
	struct svg s = { .t = &t };
	uint32_t *order = NULL;
	double height;
	int err;

	err = calltree_build(&t, p);
	if (!err) {
		order = calltree_preorder(&t);
		s.start = calloc(t.nnodes, sizeof(*s.start));
		s.cursor = calloc(t.nnodes, sizeof(*s.cursor));
		s.drawn = calloc(t.nnodes, sizeof(*s.drawn));
		if (!order || !s.start || !s.cursor || !s.drawn)
			err = -ENOMEM;
	}
	if (err)
		goto out;
	lay_out(&s, order);
	height = PAD_TOP + (double)(s.max_depth + 1) * FRAME_H + PAD_BOTTOM;
	write_head(&s, f, height, t.nodes[0].total);
	for (size_t i = 0; i < t.nnodes && !err; i++)
		if (s.drawn[order[i]])
			err = write_box(&s, f, order[i], height);
	if (err)
		goto out;
	/* the script holds no "]]>", so the CDATA section ends only where it should */
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n");
	if (fwrite(flame_svg_js, 1, flame_svg_js_len, f) != flame_svg_js_len)
		err = -EIO;
	fprintf(f, "]]></script>\n</svg>\n");
	if (!err && ferror(f))
		err = -EIO;
out:
	calltree_free(&t);
	free(order);
	free(s.start);
	free(s.cursor);
	free(s.drawn);
	strbuf_free(&s.label);
	strbuf_free(&s.cut);
	strbuf_free(&s.esc);
	return err;
}
