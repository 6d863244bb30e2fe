// SPDX-License-Identifier: MIT
// Decoder for CPython co_linetable: 3.10 PEP 626 pairs and the 3.11+ location
// table. Mirrors Objects/codeobject.c, hardened against hostile tables.

#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "symbolize/linetable.h"

/* Location-table entry kinds (CPython's _PyCodeLocationInfoKind). */
#define LOC_ONE_LINE0 10
#define LOC_ONE_LINE2 12
#define LOC_NO_COLUMNS 13
#define LOC_LONG 14
#define LOC_NONE 15

#define LOC_ENTRY_START 0x80 /* set on the first byte of an entry only */

/*
 * Add a line delta and keep the running line inside int. |delta| < 2^32 and
 * *cur stays within int, so the int64_t sum cannot overflow.
 */
static int line_add(int64_t *cur, int64_t delta)
{
	int64_t v = *cur + delta;

	if (v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	*cur = v;
	return 0;
}

/*
 * 3.10 (PEP 626): pairs of (start delta in bytes: u8, line delta: s8). A line
 * delta of -128 means "no line" and leaves the running line untouched; other
 * deltas accumulate even over zero-length ranges. Ranges are half-open.
 */
static int pep626_line_for(const uint8_t *t, size_t len, int firstlineno, uint32_t addrq, int *line)
{
	uint64_t off = (uint64_t)addrq * 2;
	uint64_t end = 0;
	int64_t cur = firstlineno;
	size_t i;

	for (i = 0; len - i >= 2; i += 2) {
		int ldelta = t[i + 1] < 0x80 ? t[i + 1] : (int)t[i + 1] - 256;
		bool noline = ldelta == -128;

		end += t[i];
		if (!noline && line_add(&cur, ldelta))
			return -EINVAL;
		/* Ranges are visited in order, so off >= this range's start. */
		if (off < end) {
			*line = noline ? 0 : (int)cur;
			return 0;
		}
	}
	if (i != len)
		return -EINVAL; /* dangling half pair */
	return -ERANGE;
}

/*
 * Varint of the location table: 6 value bits per byte, least significant
 * group first, bit 6 = more bytes follow. Values are capped at 32 bits (what
 * CPython's encoder can emit); a byte with bit 7 set starts the next entry, so
 * meeting one (or the end of the table) inside a varint means truncation.
 */
static int read_varint(const uint8_t *t, size_t len, size_t *pos, uint32_t *val)
{
	uint32_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (*pos >= len)
			return -EINVAL;
		b = t[(*pos)++];
		if (b & LOC_ENTRY_START)
			return -EINVAL;
		if (shift > 30 || (shift == 30 && (b & 0x3c)))
			return -EINVAL; /* more than 32 bits */
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*val = v;
	return 0;
}

/* Zigzag-style signed varint: magnitude in bits 1.., sign in bit 0. */
static int read_svarint(const uint8_t *t, size_t len, size_t *pos, int64_t *val)
{
	uint32_t u;
	int err = read_varint(t, len, pos, &u);

	if (err)
		return err;
	*val = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/* Skip `n` plain (non entry-start) bytes. */
static int skip_bytes(const uint8_t *t, size_t len, size_t *pos, unsigned int n)
{
	while (n--) {
		if (*pos >= len || (t[*pos] & LOC_ENTRY_START))
			return -EINVAL;
		(*pos)++;
	}
	return 0;
}

/*
 * 3.11+ location table. Each entry is fully parsed (not just skipped to the
 * next byte with bit 7 set, as CPython's line lookup does), so a table cut in
 * the middle of an entry is reported as malformed.
 */
static int location_line_for(const uint8_t *t, size_t len, int firstlineno, uint32_t addrq,
			     int *line)
{
	uint64_t end = 0; /* in code units */
	int64_t cur = firstlineno;
	size_t pos = 0;
	uint32_t u;
	int err;

	while (pos < len) {
		uint8_t b = t[pos++];
		unsigned int code = (b >> 3) & 15;
		int64_t delta = 0;
		int i;

		if (!(b & LOC_ENTRY_START))
			return -EINVAL;
		end += (b & 7) + 1;

		switch (code) {
		case LOC_NONE:
			err = 0;
			break;
		case LOC_LONG:
			/* line delta, end line delta, column+1, end column+1 */
			err = read_svarint(t, len, &pos, &delta);
			for (i = 0; !err && i < 3; i++)
				err = read_varint(t, len, &pos, &u);
			break;
		case LOC_NO_COLUMNS:
			err = read_svarint(t, len, &pos, &delta);
			break;
		default:
			if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2) {
				delta = code - LOC_ONE_LINE0;
				err = skip_bytes(t, len, &pos, 2);
			} else {
				/* short form 0-9: same line, one column byte */
				err = skip_bytes(t, len, &pos, 1);
			}
			break;
		}
		if (err)
			return err;
		if (pos < len && !(t[pos] & LOC_ENTRY_START))
			return -EINVAL; /* trailing junk inside the entry */
		if (line_add(&cur, delta))
			return -EINVAL;
		/* Entries are visited in order, so addrq >= this entry's start. */
		if (addrq < end) {
			*line = code == LOC_NONE ? 0 : (int)cur;
			return 0;
		}
	}
	return -ERANGE;
}

int linetable_line_for(enum linetable_format fmt, const uint8_t *table, size_t len, int firstlineno,
		       uint32_t addrq, int *line)
{
	if (!line || (!table && len))
		return -EINVAL;

	switch (fmt) {
	case LINETABLE_PEP626:
		return pep626_line_for(table, len, firstlineno, addrq, line);
	case LINETABLE_LOCATION:
		return location_line_for(table, len, firstlineno, addrq, line);
	}
	return -EINVAL;
}
