// SPDX-License-Identifier: MIT
/* libFuzzer target: trace's ELF readers (elfprobe.c) over an arbitrary file in a memfd,
 * as a target's binary would be: the function offset lookup, the function listing and the
 * stapsdt note listing. They must not crash, must agree with each other, and must be
 * deterministic; every listed name must be a string of the file's own bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace/elfprobe.h"
#include "fuzz.h"

static int memfd = -1;

struct seen {
	char first[256];
	size_t n;
	unsigned long long hash;
};

static void note(void *ctx, const char *name)
{
	struct seen *s = ctx;
	size_t len = strlen(name);

	FUZZ_CHECK(len > 0, "empty name listed");
	if (!s->n++)
		snprintf(s->first, sizeof(s->first), "%s", name);
	for (size_t i = 0; i < len; i++)
		s->hash = s->hash * 131 + (unsigned char)name[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen funcs = { 0 }, again = { 0 }, usdt = { 0 }, usdt2 = { 0 };
	uint64_t off = 0, off2 = 0;
	int err, err2;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-elfprobe", MFD_CLOEXEC);
		FUZZ_CHECK(memfd >= 0, "memfd_create: %s", strerror(errno));
	}
	FUZZ_CHECK(!ftruncate(memfd, 0), "ftruncate: %s", strerror(errno));
	FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite: %s", strerror(errno));

	err = elfprobe_list_funcs(memfd, "*", note, &funcs);
	FUZZ_CHECK(err == 0 || err == -ENOEXEC || err == -ENOMEM, "list error %d", err);
	FUZZ_CHECK(elfprobe_list_funcs(memfd, "*", note, &again) == err && again.n == funcs.n &&
			   again.hash == funcs.hash,
		   "listing not deterministic");
	if (!err && funcs.n) {
		/* the first function listed is found; its offset is stable */
		err = elfprobe_func_offset(memfd, funcs.first, &off);
		err2 = elfprobe_func_offset(memfd, funcs.first, &off2);
		FUZZ_CHECK(err == err2 && (err || off == off2), "offset not deterministic");
		/* found, or not in an executable segment, or no readable program headers */
		FUZZ_CHECK(err == 0 || err == -ENOENT || err == -ENOEXEC,
			   "listed function not looked up: %d", err);
	}
	err = elfprobe_list_usdt(memfd, note, &usdt);
	FUZZ_CHECK(err == 0 || err == -ENOEXEC || err == -ENOMEM, "usdt error %d", err);
	FUZZ_CHECK(elfprobe_list_usdt(memfd, note, &usdt2) == err && usdt.n == usdt2.n &&
			   usdt.hash == usdt2.hash,
		   "USDT listing not deterministic");
	if (usdt.n)
		FUZZ_CHECK(strchr(usdt.first, ':'), "USDT probe %s without provider:", usdt.first);
	FUZZ_CHECK(fcntl(memfd, F_GETFD) >= 0, "fd closed by the reader");
	return 0;
}
