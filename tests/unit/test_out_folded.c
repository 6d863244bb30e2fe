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

/* A PID that exec'd (or was reused) during the recording is two processes: the stacks of each
 * lifetime are under that lifetime's own process and thread names, not the latest ones. */
static void test_folded_names_each_lifetime_of_a_pid_apart(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_process = true, .by_thread = true },
			       "before-exec");
	char *out, want[2][256];
	size_t len;

	(void)state;
	assert_int_equal(prctl(PR_SET_NAME, "thread-one", 0, 0, 0), 0);
	fx_sample(fx, 0, (uint64_t[]){ fx_code(fx, "first", "/a.py", 1) }, 1, 3);
	fx->t.id = 2; /* the exec: same PID, a new target */
	snprintf(fx->t.comm, sizeof(fx->t.comm), "after-exec");
	assert_int_equal(profile__add_target(fx->p, &fx->t), 0);
	assert_int_equal(prctl(PR_SET_NAME, "thread-two", 0, 0, 0), 0);
	fx_sample(fx, 0, (uint64_t[]){ fx_code(fx, "second", "/b.py", 2) }, 1, 4);
	prctl(PR_SET_NAME, "test_out_folded", 0, 0, 0);
	out = fx_write(fx, out_folded_write, &len);
	assert_non_null(out);
	snprintf(want[0], sizeof(want[0]), "before-exec (%d);thread-one (%d);first (/a.py:1) 3\n",
		 getpid(), gettid());
	snprintf(want[1], sizeof(want[1]), "after-exec (%d);thread-two (%d);second (/b.py:2) 4\n",
		 getpid(), gettid());
	assert_non_null(strstr(out, want[0]));
	assert_non_null(strstr(out, want[1]));
	assert_int_equal(len, strlen(want[0]) + strlen(want[1]));
	free(out);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_hostile_names_one_line_each_and_round_trip),
		cmocka_unit_test(test_folded_names_each_lifetime_of_a_pid_apart),
	};

	return cmocka_run_group_tests_name("out_folded", tests, NULL, NULL);
}
