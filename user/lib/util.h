/* SPDX-License-Identifier: MIT */
/* Small helpers: checked number and duration parsing, growable buffers, hashing. */
#ifndef PW_UTIL_H
#define PW_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Parse a decimal integer in [min, max]; 0 or -EINVAL/-ERANGE. */
int parse_u32(const char *arg, uint32_t min, uint32_t max, uint32_t *out);
/* Parse "10", "10s", "500ms", "2m" into milliseconds; 0 or -EINVAL/-ERANGE. */
int parse_duration_ms(const char *arg, uint64_t *out_ms);
/* A duration with ns, us, ms, s (the default), m or h; 0 allowed. 0 or -EINVAL/-ERANGE. */
int parse_duration_ns(const char *arg, uint64_t *out_ns);
/* Parse a byte count "1048576", "512K", "64M", "2G" (powers of 1024) in [min, max]; 0 or
 * -EINVAL/-ERANGE. */
int parse_size(const char *arg, uint64_t min, uint64_t max, uint64_t *out);

/* Grow *buf (elements of elem_size) so that it holds at least `need` elements. */
int grow_array(void **buf, size_t *cap, size_t need, size_t elem_size);

static inline uint64_t hash_mix64(uint64_t x)
{
	/* splitmix64 finalizer: cheap and well distributed for pointers and ids */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* v with thousands separators ("1,234,567") into buf; 32 bytes are enough. Returns buf. */
char *fmt_count(uint64_t v, char *buf, size_t size);

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);

uint64_t now_ns(void);

#endif
