// SPDX-License-Identifier: MIT
/* Checked parsing, array growth and hashing shared by the modules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"

int parse_u32(const char *arg, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (!arg || !*arg || *arg == '-' || *arg == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

int parse_duration_ms(const char *arg, uint64_t *out_ms)
{
	char *end;
	double v;
	double scale;

	if (!arg || !*arg || *arg == '-' || *arg == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg)
		return -EINVAL;
	if (!*end || !strcmp(end, "s"))
		scale = 1000;
	else if (!strcmp(end, "ms"))
		scale = 1;
	else if (!strcmp(end, "m"))
		scale = 60000;
	else if (!strcmp(end, "h"))
		scale = 3600000;
	else
		return -EINVAL;
	if (!(v > 0) || v * scale > 1e12)
		return -ERANGE;
	*out_ms = (uint64_t)(v * scale + 0.5);
	if (!*out_ms)
		return -ERANGE;
	return 0;
}

int parse_duration_ns(const char *arg, uint64_t *out_ns)
{
	static const struct {
		const char *suffix;
		double ns;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 },  { "s", 1e9 },
		      { "", 1e9 }, { "m", 60e9 }, { "h", 3600e9 } };
	char *end;
	double v;

	if (!arg || !*arg || *arg == '-' || *arg == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || !(v >= 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (v * units[i].ns > 1e18)
			return -ERANGE;
		*out_ns = (uint64_t)(v * units[i].ns + 0.5);
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	if (!arg || *arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (*end)
		return -EINVAL;
	if (v > (UINT64_MAX >> shift) || v << shift < min || v << shift > max)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int grow_array(void **buf, size_t *cap, size_t need, size_t elem_size)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem_size)
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*buf, ncap * elem_size);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = ncap;
	return 0;
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	/* FNV-1a over bytes, then mixed; used for interning, not for security */
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return hash_mix64(h);
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

char *fmt_count(uint64_t v, char *buf, size_t size)
{
	char digits[24];
	size_t n = (size_t)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v), o = 0;

	if (!size)
		return buf;
	for (size_t i = 0; i < n && o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = 0;
	return buf;
}
