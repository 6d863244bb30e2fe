/* SPDX-License-Identifier: MIT */
/* A string table for writers: each distinct string gets a small dense index, so a format
 * can store names once and refer to them by number (pprof's string_table, the HTML flame
 * graph's names). Strings are copied; nothing here escapes them. */
#ifndef PW_STRTAB_H
#define PW_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab;

struct strtab *strtab__new(void);
void strtab__free(struct strtab *t);

/* Index of `s`, adding a copy on first sight (indexes count up from 0). Returns the index or
 * a negative errno (-ENOMEM, -E2BIG past UINT32_MAX - 1 strings). */
int64_t strtab__intern(struct strtab *t, const char *s);
size_t strtab__count(const struct strtab *t);
/* The string with index `i` (< strtab__count); owned by the table. NULL once removed. */
const char *strtab__get(const struct strtab *t, size_t i);
/* Free string `i`: its index goes to the next new string. 0 or -ENOMEM (it stays). */
int strtab__remove(struct strtab *t, size_t i);

#endif
