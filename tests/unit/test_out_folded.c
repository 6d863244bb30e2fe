// SPDX-License-Identifier: MIT
/* Unit tests for user/output/out_folded.c with hostile names: one line per stack, and every name
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

/* The same samples, by line and by function (--function). */
static struct fx *by_function_fixture(bool by_function)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_function = by_function }, "proc");
	/* one function per name; "pub" and "emit" run at three and two lines */
	uint64_t mod = fx_code(fx, "<module>", "/app.py", 1);
	uint64_t pub[3] = { fx_code(fx, "pub", "/app.py", 10), fx_code(fx, "pub", "/app.py", 12),
			    fx_code(fx, "pub", "/app.py", 14) };
	uint64_t emit[2] = { fx_code(fx, "emit", "/app.py", 20),
			     fx_code(fx, "emit", "/app.py", 23) };

	for (int i = 0; i < 3; i++) {
		fx_sample(fx, 0, (uint64_t[]){ mod, pub[i] }, 2, 1 + i);
		for (int j = 0; j < 2; j++)
			fx_sample(fx, 0, (uint64_t[]){ mod, pub[i], emit[j] }, 3, 10 * (i + 1) + j);
	}
	return fx;
}

struct fn_total {
	char name[32];
	unsigned long self, total;
	int line; /* the one line it was shown at; -1 if several */
};

/* Per function (a frame's name before " ("): samples where it is the leaf and samples of
 * stacks it is in; the number of output lines in *rows. */
static size_t function_totals(char *folded, struct fn_total *t, size_t max, size_t *rows)
{
	size_t n = 0;
	char *save = NULL;

	*rows = 0;
	for (char *line = strtok_r(folded, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *fsave = NULL;
		unsigned long count = strtoul(sp + 1, NULL, 10);
		bool seen[16] = { 0 };

		(*rows)++;
		*sp = 0;
		for (char *fr = strtok_r(line, ";", &fsave); fr; fr = strtok_r(NULL, ";", &fsave)) {
			char *paren = strstr(fr, " ("), *colon = strrchr(fr, ':');
			int ln = atoi(colon + 1);
			size_t i;

			*paren = 0;
			for (i = 0; i < n && strcmp(t[i].name, fr); i++)
				;
			if (i == n) {
				assert_true(n < max);
				snprintf(t[n].name, sizeof(t[n].name), "%s", fr);
				t[n++].line = ln;
			}
			if (t[i].line != ln)
				t[i].line = -1;
			if (!seen[i]) /* a stack counts once for each function in it */
				t[i].total += count;
			seen[i] = true;
			if (!fsave || !*fsave)
				t[i].self += count;
		}
	}
	return n;
}

/* --function: each function's own and total samples are those of its lines added up, and
 * its calls from several lines are one frame (at its first line), so fewer stacks. */
static void test_folded_by_function_adds_up_the_lines(void **state)
{
	struct fx *lines = by_function_fixture(false), *funcs = by_function_fixture(true);
	struct fn_total lt[8] = { 0 }, ft[8] = { 0 };
	size_t len, nl, nf, lrows, frows;
	char *lo = fx_write(lines, out_folded_write, &len),
	     *fo = fx_write(funcs, out_folded_write, &len);

	(void)state;
	assert_non_null(lo);
	assert_non_null(fo);
	assert_non_null(
		strstr(fo, "<module> (/app.py:1);pub (/app.py:10);emit (/app.py:20) 123\n"));
	assert_non_null(strstr(fo, "<module> (/app.py:1);pub (/app.py:10) 6\n"));
	nl = function_totals(lo, lt, 8, &lrows);
	nf = function_totals(fo, ft, 8, &frows);
	assert_int_equal(nl, 3);
	assert_int_equal(nf, 3);
	assert_int_equal(lrows, 9);
	assert_int_equal(frows, 2);
	for (size_t i = 0; i < nl; i++) {
		assert_string_equal(lt[i].name, ft[i].name);
		assert_int_equal(lt[i].self, ft[i].self);
		assert_int_equal(lt[i].total, ft[i].total);
		assert_int_not_equal(ft[i].line, -1); /* one line per function */
	}
	assert_int_equal(lt[1].line, -1); /* pub ran at several lines */
	free(lo);
	free(fo);
	fx_free(lines);
	fx_free(funcs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_hostile_names_one_line_each_and_round_trip),
		cmocka_unit_test(test_folded_names_each_lifetime_of_a_pid_apart),
		cmocka_unit_test(test_folded_by_function_adds_up_the_lines),
	};

	return cmocka_run_group_tests_name("out_folded", tests, NULL, NULL);
}
