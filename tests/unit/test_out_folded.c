// SPDX-License-Identifier: MIT
/* Unit tests for user/out_folded.c with hostile names: one line per stack, and every name
 * comes back unchanged through the documented escapes (\x3b, \\, \n, \xNN). */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* Undo the folded escapes in place. */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == '\\') {
			*o++ = '\\';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'n') {
			*o++ = '\n';
			s += 2;
		} else if (s[0] == '\\' && s[1] == 'x' && s[2] && s[3]) {
			char hex[3] = { s[2], s[3], 0 };

			*o++ = (char)strtoul(hex, NULL, 16);
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
}

static void test_folded_hostile_names_one_line_each_and_round_trip(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	size_t n = sizeof(fx_hostile) / sizeof(fx_hostile[0]), len, lines = 0, found = 0;
	uint64_t root = fx_code(fx, "<module>", "/srv/a;b.py", 1);
	char *out, *save = NULL, want[512];

	(void)state;
	for (size_t i = 0; i < n; i++)
		fx_sample(fx, 0, (uint64_t[]){ root, fx_code(fx, fx_hostile[i], "/f;\n.py", 9) }, 2,
			  i + 1);
	out = fx_write(fx, out_folded_write, &len);
	assert_non_null(out);
	assert_int_equal(out[len - 1], '\n');
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *semi = strchr(line, ';');
		unsigned long count = strtoul(sp + 1, NULL, 10);

		lines++;
		/* "ROOT;LEAF COUNT": exactly one separator, the count is the stack's */
		assert_non_null(sp);
		assert_non_null(semi);
		assert_null(strchr(semi + 1, ';'));
		*sp = 0;
		unescape(semi + 1);
		for (size_t i = 0; i < n; i++) {
			snprintf(want, sizeof(want), "%s (/f;\n.py:9)", fx_hostile[i]);
			if (!strcmp(semi + 1, want)) {
				assert_int_equal(count, i + 1);
				found++;
			}
		}
		*semi = 0;
		unescape(line);
		assert_string_equal(line, "<module> (/srv/a;b.py:1)");
	}
	assert_int_equal(lines, n);
	assert_int_equal(found, n);
	free(out);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_hostile_names_one_line_each_and_round_trip),
	};

	return cmocka_run_group_tests_name("out_folded", tests, NULL, NULL);
}
