/* SPDX-License-Identifier: MIT */
/* --native's separate debug files, found without trusting the target: the names come from
 * its maps and its own ELF (.gnu_debuglink), so a file is opened only below the process's
 * root or the host's /usr/lib/debug, with no symlink followed, never for I/O unless it is
 * a regular file of bounded size, and it must match the binary (build-id, else the
 * debuglink's CRC). No debuginfod: pywalk unsets DEBUGINFOD_URLS at start. */
#ifndef PW_DEBUGFILE_H
#define PW_DEBUGFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest debug file opened (and the most its CRC check reads). */
#define DEBUGFILE_MAX (1ull << 30)
/* The most MiniDebugInfo (.gnu_debugdata) may unpack to. */
#define MINIDEBUG_MAX (64ull << 20)

/* A .gnu_debuglink name pywalk looks for: a plain file name (no '/', not "." or ".."),
 * printable, of at most 255 bytes. */
bool debuglink_name_ok(const char *name);
/* The directory part of `file` (an absolute path from the maps) into buf: "/a/b" for
 * "/a/b/c". False when it is not absolute, has a ".." component or does not fit. */
bool debugfile_dir_of(const char *file, char *buf, size_t size);
/* ".build-id/xx/yyyy.debug" for a build-id into buf; false when it is empty or too long. */
bool debugfile_build_id_path(const uint8_t *id, size_t len, char *buf, size_t size);

/* Open `path` below directory `rootfd` as if that were "/" (RESOLVE_IN_ROOT), with no
 * symlink followed: only a regular non-empty file of at most `max` bytes is opened for
 * reading. fd and its size in *size; or a negative errno (-EINVAL: not a regular file,
 * -EFBIG: empty or over `max`). */
int debugfile_open_in(int rootfd, const char *path, uint64_t max, uint64_t *size);
/* zlib's CRC-32 (the debuglink's) of the first `size` bytes of fd, size <= DEBUGFILE_MAX.
 * 0 or -errno. */
int debugfile_crc(int fd, uint64_t size, uint32_t *crc);

/* What a search needs to know of the binary. */
struct debugfile_want {
	pid_t pid;
	const char *file;	 /* its path as the target sees it */
	const char *debuglink;	 /* its .gnu_debuglink name, NULL if none */
	uint32_t crc;		 /* the debuglink's CRC */
	const uint8_t *build_id; /* NULL: none */
	size_t build_id_len;
};

/* Find the binary's debug file: by build-id under the process's /usr/lib/debug then the
 * host's; then by debuglink next to the binary, in its .debug, and under both
 * /usr/lib/debug trees. fd, a malloc'ed name in *name and the file's size in *size; or
 * -ENOENT. */
int debugfile_find(const struct debugfile_want *w, char **name, uint64_t *size);

/* Whether the xz stream at data[0..size) unpacks whole, without error, to at most `max`
 * bytes (checked by unpacking it into nothing). */
bool minidebug_ok(const void *data, size_t size, uint64_t max);

#endif
