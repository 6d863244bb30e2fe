// SPDX-License-Identifier: MIT
/* --native's debug-file search (debugfile.h): which debuglink names and directories are
 * looked in, that a FIFO, a device, a symlink or an empty or oversized file is never
 * opened for reading, that '..' stays in the root, that a candidate must match by CRC,
 * and that MiniDebugInfo is unpacked only within its bound. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "symbolize/debugfile.h"

static char dir[64];
static int dirfd_;

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/pywalk-debugfile-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dirfd_ = open(dir, O_PATH | O_DIRECTORY);
	return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	close(dirfd_);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void test_debuglink_names(void **state)
{
	char longest[257];

	(void)state;
	assert_true(debuglink_name_ok("libpython3.11.so.1.0.debug"));
	assert_true(debuglink_name_ok("..x"));
	assert_false(debuglink_name_ok(NULL));
	assert_false(debuglink_name_ok(""));
	assert_false(debuglink_name_ok("."));
	assert_false(debuglink_name_ok(".."));
	assert_false(debuglink_name_ok("../../../../dev/shm/f"));
	assert_false(debuglink_name_ok("/dev/zero"));
	assert_false(debuglink_name_ok("a/b"));
	assert_false(debuglink_name_ok("a\nb"));
	memset(longest, 'a', 256);
	longest[256] = 0;
	assert_false(debuglink_name_ok(longest));
	longest[255] = 0;
	assert_true(debuglink_name_ok(longest));
}

static void test_directory_of_the_binary(void **state)
{
	char buf[16];

	(void)state;
	assert_true(debugfile_dir_of("/usr/lib/x.so", buf, sizeof(buf)));
	assert_string_equal(buf, "/usr/lib");
	assert_true(debugfile_dir_of("/x.so", buf, sizeof(buf)));
	assert_string_equal(buf, "");
	assert_true(debugfile_dir_of("/a/..b/x.so", buf, sizeof(buf)));
	assert_false(debugfile_dir_of("x.so", buf, sizeof(buf)));
	assert_false(debugfile_dir_of("rel/x.so", buf, sizeof(buf)));
	assert_false(debugfile_dir_of("/a/../x.so", buf, sizeof(buf)));
	assert_false(debugfile_dir_of("/../x.so", buf, sizeof(buf)));
	assert_false(debugfile_dir_of("/a/very/long/directory/x.so", buf, sizeof(buf)));
	assert_false(debugfile_dir_of(NULL, buf, sizeof(buf)));
}

static void test_build_id_path(void **state)
{
	const uint8_t id[] = { 0xab, 0x01, 0xff, 0x10 };
	char buf[64];

	(void)state;
	assert_true(debugfile_build_id_path(id, sizeof(id), buf, sizeof(buf)));
	assert_string_equal(buf, ".build-id/ab/01ff10.debug");
	assert_false(debugfile_build_id_path(id, 1, buf, sizeof(buf)));
	assert_false(debugfile_build_id_path(id, sizeof(id), buf, 25));
	assert_true(debugfile_build_id_path(id, sizeof(id), buf, 26));
}

/* Whether a reader holds or waits on the FIFO (a non-blocking writer then opens it). */
static bool fifo_has_reader(const char *path)
{
	int fd = open(path, O_WRONLY | O_NONBLOCK);

	if (fd < 0) {
		assert_int_equal(errno, ENXIO);
		return false;
	}
	close(fd);
	return true;
}

static void test_only_regular_files_are_opened(void **state)
{
	char path[256];
	uint64_t size = 0;
	int fd;

	(void)state;
	put("ok.debug", "0123456789");
	fd = debugfile_open_in(dirfd_, "ok.debug", 100, &size);
	assert_true(fd >= 0);
	assert_int_equal(size, 10);
	close(fd);
	/* '..' climbs no higher than the root it is opened in */
	fd = debugfile_open_in(dirfd_, "../../../../ok.debug", 100, &size);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(debugfile_open_in(dirfd_, "ok.debug", 9, &size), -EFBIG);
	put("empty.debug", "");
	assert_int_equal(debugfile_open_in(dirfd_, "empty.debug", 100, &size), -EFBIG);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(debugfile_open_in(dirfd_, "fifo", 100, &size), -EINVAL);
	assert_false(fifo_has_reader(path));
	snprintf(path, sizeof(path), "%s/null", dir);
	if (!mknod(path, S_IFCHR | 0600, makedev(1, 3)))
		assert_int_equal(debugfile_open_in(dirfd_, "null", 100, &size), -EINVAL);
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink("ok.debug", path), 0);
	assert_true(debugfile_open_in(dirfd_, "link", 100, &size) < 0);
	snprintf(path, sizeof(path), "%s/zero", dir);
	assert_int_equal(symlink("/dev/zero", path), 0);
	assert_true(debugfile_open_in(dirfd_, "zero", 100, &size) < 0);
	assert_int_equal(debugfile_open_in(dirfd_, "missing", 100, &size), -ENOENT);
}

static void test_crc_is_zlibs(void **state)
{
	uint64_t size;
	uint32_t crc = 0;
	int fd;

	(void)state;
	put("crc.debug", "hello, debuglink");
	fd = debugfile_open_in(dirfd_, "crc.debug", 100, &size);
	assert_true(fd >= 0);
	assert_int_equal(debugfile_crc(fd, size, &crc), 0);
	assert_int_equal(crc, (uint32_t)crc32(0, (const Bytef *)"hello, debuglink", 16));
	/* a file that shrank since its size was taken: an error, not a short CRC */
	assert_int_equal(debugfile_crc(fd, size + 1, &crc), -EIO);
	close(fd);
}

/* Search by debuglink next to a binary of this process (its root is "/"). */
static void test_find_by_debuglink(void **state)
{
	char file[256], sub[256];
	const char *text = "the debug file";
	struct debugfile_want w = { .pid = getpid(), .file = file, .debuglink = "x.debug" };
	char *name = NULL;
	uint64_t size = 0;
	int fd;

	(void)state;
	snprintf(file, sizeof(file), "%s/libx.so", dir);
	w.crc = (uint32_t)crc32(0, (const Bytef *)text, (uInt)strlen(text));
	assert_int_equal(debugfile_find(&w, &name, &size), -ENOENT);
	snprintf(sub, sizeof(sub), "%s/.debug", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	put(".debug/x.debug", text);
	fd = debugfile_find(&w, &name, &size);
	assert_true(fd >= 0);
	assert_int_equal(size, strlen(text));
	assert_non_null(strstr(name, "/.debug/x.debug"));
	close(fd);
	free(name);
	/* the CRC must match */
	w.crc ^= 1;
	assert_int_equal(debugfile_find(&w, &name, &size), -ENOENT);
	w.crc ^= 1;
	/* a name with a '/' is not looked for, wherever it would lead */
	w.debuglink = "../.debug/x.debug";
	assert_int_equal(debugfile_find(&w, &name, &size), -ENOENT);
}

static void test_minidebuginfo_is_unpacked_within_its_bound(void **state)
{
	size_t plain = 1 << 20, packed = 0;
	uint8_t *in = calloc(1, plain), *out = malloc(plain);

	(void)state;
	assert_non_null(in);
	assert_non_null(out);
	assert_int_equal(
		lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, in, plain, out, &packed, plain),
		LZMA_OK);
	assert_true(minidebug_ok(out, packed, plain));
	/* 1 MiB of zeros packs to a few hundred bytes: a bound below what it unpacks to */
	assert_false(minidebug_ok(out, packed, plain - 1));
	assert_false(minidebug_ok(out, packed / 2, plain));
	assert_false(minidebug_ok("not xz at all", 13, plain));
	free(in);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debuglink_names),
		cmocka_unit_test(test_directory_of_the_binary),
		cmocka_unit_test(test_build_id_path),
		cmocka_unit_test(test_only_regular_files_are_opened),
		cmocka_unit_test(test_crc_is_zlibs),
		cmocka_unit_test(test_find_by_debuglink),
		cmocka_unit_test(test_minidebuginfo_is_unpacked_within_its_bound),
	};

	return cmocka_run_group_tests_name("debugfile", tests, setup, teardown);
}
