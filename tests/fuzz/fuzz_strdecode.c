// SPDX-License-Identifier: MIT
/* libFuzzer target: symtab_decode_str(), CPython compact str images (1, 2 or 4 bytes per
 * character) to UTF-8. Input: a control byte (bits 0-1 pick the kind 1/2/4 or an invalid
 * one, bit 2 = truncated), then the character data. */
#include <string.h>

#include "fuzz.h"
#include "lib/escape.h"
#include "symbolize/symtab.h"

/* What a code point becomes: CPython str may hold lone surrogates, UTF-8 cannot. */
static uint32_t expected_cp(uint32_t c)
{
	return (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ? 0xfffd : c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int kinds[4] = { 1, 2, 4, 3 };
	unsigned int kind;
	bool truncated;
	size_t len, olen, pos = 0;
	uint8_t *chars;
	char *out;

	if (size < 1)
		return 0;
	kind = kinds[data[0] & 3];
	truncated = data[0] & 4;
	if (data[0] & 8)
		kind = data[0] >> 4; /* any other kind value, 0-15 */
	len = (size - 1) / (kind ? kind : 1);
	/* exactly len * kind bytes on the heap, so reading one more is caught */
	chars = malloc(len * kind + 1);
	FUZZ_CHECK(chars, "malloc");
	memcpy(chars, data + 1, len * kind);

	out = symtab_decode_str(chars, len, kind, truncated);
	if (kind != 1 && kind != 2 && kind != 4) {
		FUZZ_CHECK(!out, "kind %u accepted", kind);
		free(chars);
		return 0;
	}
	FUZZ_CHECK(out, "kind %u, %zu characters: NULL", kind, len);
	olen = strlen(out);
	FUZZ_CHECK(olen <= 4 * len + (truncated ? 3 : 0), "%zu bytes for %zu characters", olen,
		   len);
	/* Every character comes out as itself (or U+FFFD; U+0000 as ESCAPE_NUL, so it cannot
	 * end the C string), then a truncated string ends in U+2026: valid UTF-8 but for the
	 * ESCAPE_NUL pairs. */
	for (size_t i = 0; i <= len; i++) {
		uint32_t want, got = 0;
		size_t n;

		if (i < len) {
			uint32_t c = 0;

			memcpy(&c, chars + i * kind, kind); /* little-endian host */
			want = expected_cp(c);
		} else if (truncated) {
			want = 0x2026;
		} else {
			FUZZ_CHECK(pos == olen, "output goes on after the end");
			break;
		}
		if (!want) {
			FUZZ_CHECK(olen - pos >= 2 && !memcmp(out + pos, ESCAPE_NUL, 2),
				   "character %zu: U+0000 is not ESCAPE_NUL", i);
			pos += 2;
			continue;
		}
		n = fuzz_utf8_next((const uint8_t *)out + pos, olen - pos, &got);
		FUZZ_CHECK(n && got == want, "character %zu: U+%04X, want U+%04X", i, got, want);
		pos += n;
		FUZZ_CHECK(i < len || pos == olen, "bytes after the truncation mark");
	}
	free(out);
	free(chars);
	return 0;
}
