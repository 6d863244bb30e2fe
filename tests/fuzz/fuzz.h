/* SPDX-License-Identifier: MIT */
/* Shared by the libFuzzer targets: a check that aborts with a message (libFuzzer then saves
 * the input as a crash), and an independent strict UTF-8 validator for the oracles. */
#ifndef PW_FUZZ_H
#define PW_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* libFuzzer's entry point, which every target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Its optional set-up, before the first input. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* abort(), not assert(): the check must hold whatever NDEBUG says */
#define FUZZ_CHECK(cond, ...)                                                                   \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, \
				#cond);                                                         \
			fprintf(stderr, __VA_ARGS__);                                           \
			fputc('\n', stderr);                                                    \
			abort();                                                                \
		}                                                                               \
	} while (0)

/* Decode one scalar value at s[0..len) per RFC 3629 (no overlongs, no surrogates, nothing
 * past U+10FFFF). Returns its length in bytes, 0 when the bytes are not well-formed. */
static inline size_t fuzz_utf8_next(const uint8_t *s, size_t len, uint32_t *cp)
{
	size_t n;
	uint32_t c, min;

	if (!len)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, c = s[0] & 0x1f, min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3, c = s[0] & 0x0f, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Offset of the first byte that is not part of well-formed UTF-8, or len if all is. */
static inline size_t fuzz_utf8_invalid_at(const uint8_t *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		uint32_t cp;
		size_t n = fuzz_utf8_next(s + i, len - i, &cp);

		if (!n)
			return i;
		i += n;
	}
	return len;
}

/* A heap copy of data with a NUL after it, so ASan sees reads past the end of the input. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	for (size_t i = 0; i < size; i++)
		s[i] = (char)data[i];
	s[size] = 0;
	return s;
}

#endif
