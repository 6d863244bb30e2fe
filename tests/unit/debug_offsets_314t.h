// SPDX-License-Identifier: MIT
/* Shared by the unit tests that need a real layout table. */
#ifndef PYWALK_TEST_DEBUG_OFFSETS_314T_H
#define PYWALK_TEST_DEBUG_OFFSETS_314T_H

#include <stdint.h>

/* (position in _Py_DebugOffsets, value) pairs measured on live processes */
struct field {
	uint16_t pos;
	uint64_t value;
};

/* The free-threaded 3.14.7 build's own _Py_DebugOffsets (every non-zero word from 24 to
 * 760, read from a live bin/python3.14t that scripts/get-cpython-release.sh built): the
 * layout facts below all come from this table, none from the default build's. */
static const struct field f314t[] __attribute__((unused)) = {
	{ 24, 362368 }, { 32, 784 },   { 40, 808 },   { 48, 246720 }, { 56, 7280 },  { 64, 7272 },
	{ 72, 7344 },	{ 80, 7360 },  { 88, 7408 },  { 96, 7712 },   { 104, 7696 }, { 112, 7704 },
	{ 120, 16 },	{ 128, 7808 }, { 144, 7832 }, { 152, 7824 },  { 160, 8024 }, { 168, 17628 },
	{ 176, 832 },	{ 192, 8 },    { 200, 16 },   { 208, 72 },    { 216, 152 },  { 224, 160 },
	{ 232, 232 },	{ 240, 32 },   { 248, 88 },   { 256, 8 },     { 272, 56 },   { 280, 80 },
	{ 288, 78 },	{ 296, 64 },   { 304, 72 },   { 312, 240 },   { 320, 128 },  { 328, 136 },
	{ 336, 144 },	{ 344, 152 },  { 352, 84 },   { 360, 68 },    { 368, 112 },  { 376, 120 },
	{ 384, 232 },	{ 392, 224 },  { 400, 32 },   { 408, 24 },    { 416, 432 },  { 424, 40 },
	{ 432, 104 },	{ 440, 184 },  { 448, 56 },   { 456, 48 },    { 464, 32 },   { 472, 56 },
	{ 480, 40 },	{ 488, 32 },   { 496, 216 },  { 504, 40 },    { 512, 56 },   { 520, 48 },
	{ 528, 64 },	{ 536, 48 },   { 544, 56 },   { 552, 40 },    { 560, 32 },   { 568, 48 },
	{ 576, 32 },	{ 584, 40 },   { 592, 56 },   { 600, 32 },    { 608, 48 },   { 616, 80 },
	{ 624, 48 },	{ 632, 32 },   { 640, 56 },   { 648, 288 },   { 656, 192 },  { 664, 176 },
	{ 672, 40 },	{ 680, 88 },   { 688, 83 },   { 704, 8 },     { 712, 24 },   { 720, 304 },
	{ 728, 8108 },	{ 744, 4 },    { 752, 512 },
};

#endif
