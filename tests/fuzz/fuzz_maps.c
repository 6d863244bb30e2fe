// SPDX-License-Identifier: MIT
/* libFuzzer target: proc_parse_maps_line() over an arbitrary /proc/PID/maps text, split
 * into lines the way getline() hands them to proc_read_maps() (newline kept). */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fuzz.h"
#include "inspect/proc.h"

static void check_line(const char *line)
{
	struct proc_map m, again;
	char *fmt;
	int err, n;

	err = proc_parse_maps_line(line, &m);
	FUZZ_CHECK(err == 0 || err == -EINVAL, "error %d", err);
	if (err) {
		FUZZ_CHECK(!m.path, "path left on a refused line");
		return;
	}
	FUZZ_CHECK(strlen(m.perms) <= 4, "perms overflow");
	if (m.path) {
		size_t len = strlen(m.path), end = strlen(line);

		FUZZ_CHECK(m.path[0] == '/', "path %s is not one", m.path);
		FUZZ_CHECK(!strchr(m.path, '\n'), "newline kept in the path");
		/* the path runs to the end of the line: spaces and " (deleted)" included */
		if (end && line[end - 1] == '\n')
			end--;
		FUZZ_CHECK(end >= len && !memcmp(line + end - len, m.path, len), "path cut short");
	}
	/* what was parsed, printed the way the kernel prints it, parses the same */
	n = asprintf(&fmt, "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64 " %02x:%02x %" PRIu64 " %s\n",
		     m.start, m.end, m.perms, m.offset, m.dev_major, m.dev_minor, m.inode,
		     m.path ? m.path : "");
	FUZZ_CHECK(n >= 0, "asprintf");
	if (m.perms[0]) {
		FUZZ_CHECK(!proc_parse_maps_line(fmt, &again), "reprinted line refused: %s", fmt);
		bool same = again.start == m.start && again.end == m.end &&
			    again.offset == m.offset && again.inode == m.inode &&
			    again.dev_major == m.dev_major && again.dev_minor == m.dev_minor &&
			    !strcmp(again.perms, m.perms) && !again.path == !m.path &&
			    (!m.path || !strcmp(again.path, m.path));

		FUZZ_CHECK(same, "reprinted line parses differently: %s", fmt);
		free(again.path);
	}
	free(fmt);
	free(m.path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t start = 0;

	while (start < size) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - data) + 1 : size;
		char *line = fuzz_cstr(data + start, end - start);

		check_line(line);
		free(line);
		start = end;
	}
	return 0;
}
