// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "symbolize/debugfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "inspect/proc.h"

#define NAME_MAX_LEN 255

bool debuglink_name_ok(const char *name)
{
	size_t len = name ? strnlen(name, NAME_MAX_LEN + 1) : 0;

	if (!len || len > NAME_MAX_LEN || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return true;
}

bool debugfile_dir_of(const char *file, char *buf, size_t size)
{
	const char *slash = file ? strrchr(file, '/') : NULL;
	size_t len;

	if (!slash || file[0] != '/')
		return false;
	len = (size_t)(slash - file);
	if (len >= size)
		return false;
	memcpy(buf, file, len);
	buf[len] = 0;
	/* RESOLVE_IN_ROOT keeps ".." inside the root, but the host's debug tree is a root of
	 * its own only for what is below it: refuse it outright */
	for (const char *c = buf; (c = strstr(c, "/..")); c += 3)
		if (c[3] == '/' || c[3] == 0)
			return false;
	return true;
}

bool debugfile_build_id_path(const uint8_t *id, size_t len, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t need = sizeof(".build-id/") - 1 + 2 + 1 + 2 * (len ? len - 1 : 0) + sizeof(".debug");
	size_t j;

	/* a GNU build-id is 8 to 64 bytes; 2 of them make no file name */
	if (len < 2 || len > 64 || need > size)
		return false;
	j = (size_t)snprintf(buf, size, ".build-id/%c%c/", hex[id[0] >> 4], hex[id[0] & 15]);
	for (size_t i = 1; i < len; i++) {
		buf[j++] = hex[id[i] >> 4];
		buf[j++] = hex[id[i] & 15];
	}
	memcpy(buf + j, ".debug", sizeof(".debug"));
	return true;
}

static int openat2_in_root(int rootfd, const char *path, uint64_t flags)
{
	struct open_how how = {
		.flags = flags | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

	return fd >= 0 ? (int)fd : -errno;
}

int debugfile_open_in(int rootfd, const char *path, uint64_t max, uint64_t *size)
{
	/* O_PATH first: a FIFO or a device is looked at, never opened for I/O */
	int pfd = openat2_in_root(rootfd, path, O_PATH), fd;
	struct stat st, again;

	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st) || !S_ISREG(st.st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	if (st.st_size <= 0 || (uint64_t)st.st_size > max) {
		close(pfd);
		return -EFBIG;
	}
	fd = proc_reopen_for_reading(pfd);
	close(pfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &again) || again.st_ino != st.st_ino || again.st_dev != st.st_dev) {
		close(fd);
		return -ESTALE;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

int debugfile_crc(int fd, uint64_t size, uint32_t *crc)
{
	unsigned char buf[16384];
	uLong c = crc32(0, Z_NULL, 0);
	uint64_t off = 0;

	if (size > DEBUGFILE_MAX)
		return -EFBIG;
	while (off < size) {
		size_t want = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO; /* shrunk since fstat */
		c = crc32(c, buf, (uInt)n);
		off += (uint64_t)n;
	}
	*crc = (uint32_t)c;
	return 0;
}

/* A directory below `rootfd` as a root of its own, or -errno. */
static int open_dir_in(int rootfd, const char *path)
{
	return openat2_in_root(rootfd, path, O_PATH | O_DIRECTORY);
}

/* Whether the ELF file on fd has the build-id `id`. */
static bool has_build_id(int fd, const uint8_t *id, size_t len)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &got) : -1;
	bool same = n > 0 && (size_t)n == len && !memcmp(got, id, len);

	if (e)
		elf_end(e);
	return same;
}

/* The candidate `path` below `rootfd`, if it is the binary's: the same build-id when the
 * binary has one, else the debuglink's CRC. fd or -errno. */
static int try_candidate(int rootfd, const char *path, const struct debugfile_want *w,
			 uint64_t *size)
{
	int fd;
	uint32_t crc;

	if (rootfd < 0)
		return -ENOENT;
	fd = debugfile_open_in(rootfd, path, DEBUGFILE_MAX, size);
	if (fd < 0)
		return fd;
	if (w->build_id && w->build_id_len ? has_build_id(fd, w->build_id, w->build_id_len)
					   : !debugfile_crc(fd, *size, &crc) && crc == w->crc)
		return fd;
	close(fd);
	return -ESTALE;
}

enum { ROOT_PROC, ROOT_PROC_DEBUG, ROOT_HOST_DEBUG, NROOTS };

int debugfile_find(const struct debugfile_want *w, char **name, uint64_t *size)
{
	int roots[NROOTS] = { -1, -1, -1 };
	char dir[4096], rel[4096 + 2 * NAME_MAX_LEN], bid[256], proc_root[64];
	char shown[NROOTS][96];
	int fd = -ENOENT, host;
	struct {
		int root;
		const char *sub; /* by link: between the binary's directory and the name */
		bool by_link;
	} cands[] = {
		{ ROOT_PROC_DEBUG, "", false }, { ROOT_HOST_DEBUG, "", false },
		{ ROOT_PROC, "", true },	{ ROOT_PROC, ".debug/", true },
		{ ROOT_PROC_DEBUG, "", true },	{ ROOT_HOST_DEBUG, "", true },
	};
	bool have_bid = w->build_id &&
			debugfile_build_id_path(w->build_id, w->build_id_len, bid, sizeof(bid));
	bool have_link = w->debuglink && debuglink_name_ok(w->debuglink) &&
			 debugfile_dir_of(w->file, dir, sizeof(dir));

	if (!have_bid && !have_link)
		return -ENOENT;
	snprintf(proc_root, sizeof(proc_root), "/proc/%d/root", (int)w->pid);
	snprintf(shown[ROOT_PROC], sizeof(shown[0]), "%s", proc_root);
	snprintf(shown[ROOT_PROC_DEBUG], sizeof(shown[0]), "%s/usr/lib/debug", proc_root);
	snprintf(shown[ROOT_HOST_DEBUG], sizeof(shown[0]), "/usr/lib/debug");
	roots[ROOT_PROC] = open(proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (roots[ROOT_PROC] >= 0)
		roots[ROOT_PROC_DEBUG] = open_dir_in(roots[ROOT_PROC], "/usr/lib/debug");
	host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (host >= 0) {
		roots[ROOT_HOST_DEBUG] = open_dir_in(host, "/usr/lib/debug");
		close(host);
	}
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]) && fd < 0; i++) {
		if (cands[i].by_link ? !have_link : !have_bid)
			continue;
		if (cands[i].by_link)
			snprintf(rel, sizeof(rel), "%s/%s%s", dir, cands[i].sub, w->debuglink);
		else
			snprintf(rel, sizeof(rel), "%s", bid);
		fd = try_candidate(roots[cands[i].root], rel, w, size);
		if (fd >= 0) {
			/* what libdwfl shows as the module's debug file */
			if (asprintf(name, "%s%s%s", shown[cands[i].root], rel[0] == '/' ? "" : "/",
				     rel) < 0) {
				close(fd);
				fd = -ENOMEM;
				break;
			}
		}
	}
	for (int i = 0; i < NROOTS; i++)
		if (roots[i] >= 0)
			close(roots[i]);
	return fd >= 0 ? fd : -ENOENT;
}

bool minidebug_ok(const void *data, size_t size, uint64_t max)
{
	static uint8_t sink[1 << 16];
	lzma_stream s = LZMA_STREAM_INIT;
	uint64_t out = 0;
	lzma_ret rc;

	/* the decoder's own memory bounded too (a dictionary is what it allocates) */
	if (lzma_stream_decoder(&s, 64ull << 20, 0) != LZMA_OK)
		return false;
	s.next_in = data;
	s.avail_in = size;
	do {
		s.next_out = sink;
		s.avail_out = sizeof(sink);
		rc = lzma_code(&s, LZMA_FINISH);
		out += sizeof(sink) - s.avail_out;
	} while (rc == LZMA_OK && out <= max);
	lzma_end(&s);
	return rc == LZMA_STREAM_END && out <= max;
}
