/* SPDX-License-Identifier: MIT */
/* Escaping of untrusted names for each output syntax. All functions append to a growable
 * buffer and return 0 or -ENOMEM. */
#ifndef PW_ESCAPE_H
#define PW_ESCAPE_H

#include <stddef.h>

struct strbuf {
	char *buf;
	size_t len, cap;
};

int strbuf_add(struct strbuf *sb, const char *s, size_t len);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_reset(struct strbuf *sb);
void strbuf_free(struct strbuf *sb);

/* Collapsed-stack text: ';' separates frames and a newline ends a stack, so both (plus '\\'
 * and other control bytes) are written as backslash escapes: \x3b, \n, \\, \xNN. */
int escape_folded(struct strbuf *sb, const char *s);

#endif
