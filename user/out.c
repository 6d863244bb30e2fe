// SPDX-License-Identifier: MIT
/* The table of output formats. */
#include <string.h>

#include "out.h"

static const struct out_writer writers[] = {
	{ "folded", ".folded", out_folded_write },
	{ "folded", ".collapsed", out_folded_write },
	{ "folded", ".txt", out_folded_write },
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
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return NULL;
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i].extension, dot))
			return &writers[i];
	return NULL;
}

const char *out_names(void)
{
	return "folded";
}
