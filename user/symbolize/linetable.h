/* SPDX-License-Identifier: MIT */
/* Map a bytecode offset to a source line by decoding a CPython co_linetable
 * (3.10 PEP 626 table or the 3.11+ location table). The table may come from an
 * untrusted process: decoding is bounded and never reads outside it. */
#ifndef PYWALK_LINETABLE_H
#define PYWALK_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "inspect/pyver.h"

/* Line executing at instruction `addrq` (offset in 2-byte code units from the start of the
 * bytecode) of a code object whose first line is `firstlineno`. Returns 0 and sets *line;
 * *line = 0 when the table says the instruction has no line. Returns -ERANGE when addrq is
 * past the end of the table, -EINVAL for a malformed table. Never reads outside table[0..len). */
int linetable_line_for(enum linetable_format fmt, const uint8_t *table, size_t len, int firstlineno,
		       uint32_t addrq, int *line);

#endif /* PYWALK_LINETABLE_H */
