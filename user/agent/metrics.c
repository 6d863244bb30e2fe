// SPDX-License-Identifier: MIT
/* Prometheus text format. Numbers are written with %.17g (exact for counters below 2^53,
 * which is where Prometheus's own float64 keeps them exact too). */
#include <errno.h>
#include <string.h>

#include "agent/metrics.h"

int metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
	return strbuf_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: \\ \" and \n escaped, anything else as is (UTF-8 made valid). */
static int add_label_value(struct strbuf *sb, const char *v)
{
	struct strbuf clean = { 0 };

	if (escape_utf8(&clean, v))
		strbuf_fail(sb, clean.err ? clean.err : -ENOMEM);
	for (size_t i = 0; !clean.err && i < clean.len; i++) {
		char c = clean.buf[i];

		if (c == '\\')
			strbuf_add(sb, "\\\\", 2);
		else if (c == '"')
			strbuf_add(sb, "\\\"", 2);
		else if (c == '\n')
			strbuf_add(sb, "\\n", 2);
		else
			strbuf_add(sb, &c, 1);
	}
	strbuf_free(&clean);
	return sb->err;
}

int metrics_sample(struct strbuf *sb, const char *name, const char *const *labels, double value)
{
	strbuf_add(sb, name, strlen(name));
	if (labels && labels[0]) {
		strbuf_add(sb, "{", 1);
		for (size_t i = 0; labels[i] && labels[i + 1]; i += 2) {
			strbuf_addf(sb, "%s%s=\"", i ? "," : "", labels[i]);
			add_label_value(sb, labels[i + 1]);
			strbuf_add(sb, "\"", 1);
		}
		strbuf_add(sb, "}", 1);
	}
	return strbuf_addf(sb, " %.17g\n", value);
}

int metrics_one(struct strbuf *sb, const char *name, const char *type, const char *help,
		double value)
{
	metrics_family(sb, name, type, help);
	return metrics_sample(sb, name, NULL, value);
}
