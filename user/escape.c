// SPDX-License-Identifier: MIT
/* String building and per-format escaping of names read from target processes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "util.h"

int strbuf_add(struct strbuf *sb, const char *s, size_t len)
{
	int err = grow_array((void **)&sb->buf, &sb->cap, sb->len + len + 1, 1);

	if (err)
		return err;
	memcpy(sb->buf + sb->len, s, len);
	sb->len += len;
	sb->buf[sb->len] = 0;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return strbuf_add(sb, small, n);
	if (grow_array((void **)&sb->buf, &sb->cap, sb->len + n + 1, 1))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	va_end(ap);
	sb->len += n;
	return 0;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = 0;
}

void strbuf_free(struct strbuf *sb)
{
	free(sb->buf);
	memset(sb, 0, sizeof(*sb));
}

int escape_folded(struct strbuf *sb, const char *s)
{
	const char *run = s;
	int err = 0;

	for (; *s && !err; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c >= 0x20 && c != 0x7f && c != ';' && c != '\\')
			continue;
		err = strbuf_add(sb, run, s - run);
		if (c == '\n')
			strcpy(esc, "\\n");
		else if (c == '\\')
			strcpy(esc, "\\\\");
		else
			snprintf(esc, sizeof(esc), "\\x%02x", c);
		if (!err)
			err = strbuf_add(sb, esc, strlen(esc));
		run = s + 1;
	}
	if (!err)
		err = strbuf_add(sb, run, s - run);
	return err;
}
