// SPDX-License-Identifier: MIT
/* libFuzzer target: what --native's debug-file search takes from a target (debugfile.h).
 * An input is one of:
 *   an ELF image: its .gnu_debuglink as libdwfl reads it (dwelf), then validated;
 *   an xz stream: MiniDebugInfo, unpacked only within a bound;
 *   "PATH\nSECTION": a maps path and .gnu_debuglink contents.
 * The oracle: a name accepted is a plain file name, a directory accepted is absolute with
 * no ".." component, so the path searched below a root ("DIR/NAME") has none either; the
 * build-id path is ".build-id/xx/hex.debug". */
#include <string.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "symbolize/debugfile.h"
#include "fuzz.h"

static void check_name(const char *name)
{
	size_t len = strlen(name);

	if (!debuglink_name_ok(name))
		return;
	FUZZ_CHECK(len >= 1 && len <= 255, "accepted a name of %zu bytes", len);
	FUZZ_CHECK(!strchr(name, '/'), "accepted a name with '/'");
	FUZZ_CHECK(strcmp(name, ".") && strcmp(name, ".."), "accepted '%s'", name);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)name[i] >= 0x20 && name[i] != 0x7f,
			   "accepted a control byte at %zu", i);
}

/* No "..", "." or empty component after the leading '/'. */
static bool no_dotdot(const char *path)
{
	for (const char *c = path; *c;) {
		const char *end = strchr(c, '/');
		size_t n = end ? (size_t)(end - c) : strlen(c);

		if (n == 2 && !memcmp(c, "..", 2))
			return false;
		c += n + (end ? 1 : 0);
	}
	return true;
}

static void check_path_and_link(const char *file, const char *name)
{
	char dir[4096], rel[4096 + 300];

	check_name(name);
	if (!debugfile_dir_of(file, dir, sizeof(dir)))
		return;
	FUZZ_CHECK(file[0] == '/' && !strncmp(dir, file, strlen(dir)) && file[strlen(dir)] == '/',
		   "dir '%s' is not the directory of the file", dir);
	if (!debuglink_name_ok(name))
		return;
	snprintf(rel, sizeof(rel), "%s/.debug/%s", dir, name);
	FUZZ_CHECK(no_dotdot(rel), "searched path '%s' has a '..'", rel);
}

static void check_build_id(const uint8_t *id, size_t len)
{
	char buf[256];

	if (!debugfile_build_id_path(id, len, buf, sizeof(buf)))
		return;
	FUZZ_CHECK(len >= 2 && strlen(buf) == 10 + 2 + 1 + 2 * (len - 1) + 6,
		   "build-id path of %zu bytes is %zu long", len, strlen(buf));
	FUZZ_CHECK(!strncmp(buf, ".build-id/", 10) && buf[12] == '/' &&
			   !strcmp(buf + strlen(buf) - 6, ".debug") && no_dotdot(buf),
		   "bad build-id path '%s'", buf);
	for (size_t i = 10; buf[i] != '.'; i++)
		FUZZ_CHECK(i == 12 || strchr("0123456789abcdef", buf[i]), "not hex in '%s'", buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_cstr(data, size);

	if (size >= 4 && !memcmp(data,
				 "\x7f"
				 "ELF",
				 4)) {
		Elf *e;
		GElf_Word crc = 0;
		const char *name;

		elf_version(EV_CURRENT);
		e = elf_memory(in, size);
		name = e ? dwelf_elf_gnu_debuglink(e, &crc) : NULL;
		if (name)
			check_path_and_link("/usr/lib/libx.so", name);
		if (e)
			elf_end(e);
	} else if (size >= 6 && !memcmp(data,
					"\xfd"
					"7zXZ\0",
					6)) {
		/* unpacks at most 1 MiB before it is refused: libFuzzer's time limit holds */
		(void)minidebug_ok(data, size, 1 << 20);
	} else {
		char *nl = memchr(in, '\n', size);
		const char *section = nl ? nl + 1 : in;

		if (nl)
			*nl = 0;
		/* the name stops at its NUL (dwelf: within the section) */
		check_path_and_link(nl ? in : "/usr/lib/libx.so", section);
		check_build_id((const uint8_t *)section, size - (size_t)(section - in) > 64
								 ? 64
								 : size - (size_t)(section - in));
	}
	free(in);
	return 0;
}
