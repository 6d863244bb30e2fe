// SPDX-License-Identifier: MIT
/* libFuzzer target: linetable_line_for() over hostile co_linetable bytes in both formats.
 * Input: format byte (bit 0: 0 = 3.10 PEP 626, 1 = 3.11+ location table), firstlineno
 * (s32 LE), instruction (u32 LE), then the table. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "symbolize/linetable.h"

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int lookup(enum linetable_format fmt, const uint8_t *t, size_t len, int first,
		  uint32_t addrq, int *line)
{
	int err;

	*line = 0x5a5a5a5a;
	err = linetable_line_for(fmt, t, len, first, addrq, line);
	FUZZ_CHECK(err == 0 || err == -ERANGE || err == -EINVAL, "unexpected error %d", err);
	FUZZ_CHECK(err == 0 || *line == 0x5a5a5a5a, "line written on error %d", err);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum linetable_format fmt;
	uint32_t addrq;
	int first, line, again, err;
	const uint8_t *table;
	size_t len;

	if (size < 9)
		return 0;
	fmt = data[0] & 1 ? LINETABLE_LOCATION : LINETABLE_PEP626;
	first = (int)get_u32(data + 1);
	addrq = get_u32(data + 5);
	table = data + 9;
	len = size - 9;

	err = lookup(fmt, table, len, first, addrq, &line);
	FUZZ_CHECK(lookup(fmt, table, len, first, addrq, &again) == err && (err || again == line),
		   "not deterministic");
	/* Entries are decoded in order, so an instruction found in the table implies that every
	 * earlier one is found too; one past the end implies every later one is past it. */
	if (!err) {
		uint32_t before[] = { 0, addrq / 2, addrq ? addrq - 1 : 0 };

		for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++)
			FUZZ_CHECK(!lookup(fmt, table, len, first, before[i], &again),
				   "addrq %u decodes but %u does not", addrq, before[i]);
	} else if (err == -ERANGE && addrq < UINT32_MAX) {
		FUZZ_CHECK(lookup(fmt, table, len, first, addrq + 1, &again) == -ERANGE,
			   "addrq %u is past the end but %u is not", addrq, addrq + 1);
	}
	/* An empty table has no lines; a NULL one with a length is refused. */
	FUZZ_CHECK(lookup(fmt, NULL, 0, first, addrq, &again) == -ERANGE, "empty table");
	FUZZ_CHECK(lookup(fmt, NULL, len + 1, first, addrq, &again) == -EINVAL, "NULL table");
	return 0;
}
