// SPDX-License-Identifier: MIT
/* A library that looks like CPython's _asyncio to a reader of its ELF sections: an
 * .AsyncioDebug table (Py_AsyncioModuleDebugOffsets: 13 words) whose sizes no interpreter
 * has, a task object of 1 TiB whose fields lie outside it. A reader that believed it would
 * read far outside any task; pywalk must reject it and say so. Loaded with ctypes by
 * tests/targets/no_asyncio.py. */
#include <stdint.h>

__attribute__((section(".AsyncioDebug"), used)) const uint64_t bad_asyncio_debug[13] = {
	1ull << 40, 1ull << 39, 1ull << 39, 1ull << 39, 1ull << 39, 1ull << 39, 1ull << 39,
	16, 8,
	1104, 1024, 1032, 1048,
};
