// SPDX-License-Identifier: MIT
/* The table of output formats. */
#include <string.h>
#include <strings.h>

#include "output/out.h"

static const struct out_writer writers[] = {
	{ "folded", ".folded", out_folded_write, false },
	{ "folded", ".collapsed", out_folded_write, false },
	{ "folded", ".txt", out_folded_write, false },
	{ "html", ".html", out_html_write, false },
	{ "html", ".htm", out_html_write, false },
	{ "speedscope", ".speedscope.json", out_speedscope_write, false },
	{ "timeline", ".timeline.json", out_timeline_write, true },
	{ "speedscope", ".json", out_speedscope_write, false },
	{ "pprof", ".pb.gz", out_pprof_write, false },
	{ "pprof", ".pprof", out_pprof_write, false },
	{ "svg", ".svg", out_svg_write, false },
};

const struct out_writer *out_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i].name, name))
			return &writers[i];
	return NULL;
}

const struct out_writer *out_by_path(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t len;

	base = base ? base + 1 : path;
	len = strlen(base);
	/* rows are matched in order, so ".speedscope.json" is tried before ".json" */
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		size_t elen = strlen(writers[i].extension);

		/* the extension must follow a name: ".json" alone is a hidden file */
		if (len > elen && !strcasecmp(base + len - elen, writers[i].extension))
			return &writers[i];
	}
	return NULL;
}

const struct out_writer *out_choose(const char *format, const char *path)
{
	const struct out_writer *w = format ? out_by_name(format) : NULL;

	if (!w && path)
		w = out_by_path(path);
	return w ? w : out_by_name("folded");
}

bool out_path_has_extension(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strrchr(base, '.') > base;
}

const char *out_names(void)
{
	return "folded, html, svg, speedscope, timeline, pprof";
}
