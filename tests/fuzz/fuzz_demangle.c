// SPDX-License-Identifier: MIT
/* libFuzzer target: demangle() over a target's symbol names of any bytes and length. A
 * name longer than DEMANGLE_MAX, or not "_Z...", is never demangled; a demangled one is a
 * string of its own (freed here: ASan sees a double use). */
#include <string.h>

#include "symbolize/demangle.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_cstr(data, size);
	char *out = demangle(in);
	size_t len = strlen(in);

	if (out) {
		FUZZ_CHECK(len <= DEMANGLE_MAX && !strncmp(in, "_Z", 2),
			   "demangled a name of %zu bytes: '%.20s...'", len, in);
		FUZZ_CHECK(strlen(out) > 0, "empty demangled name");
		free(out);
	}
	free(in);
	return 0;
}
