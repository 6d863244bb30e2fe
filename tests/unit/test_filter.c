// SPDX-License-Identifier: MIT
/* --filter's compiler: the postfix programs it emits for the BPF side (which trusts their
 * shape), the fields each probe kind allows, and its refusals. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "trace/filter.h"

static struct probe_set set;
static struct filter_set fs;
static char why[512];

static void one_probe(const char *text, bool latency)
{
	memset(&set, 0, sizeof(set));
	assert_int_equal(probe_set_add(&set, text, why, sizeof(why)), 0);
	set.probes[0].latency = latency;
}

static int compile(const char *expr)
{
	why[0] = 0;
	return filter_compile(&fs, expr, &set, false, why, sizeof(why));
}

/* The ids the programs see as the current thread's. */
static int64_t cur_pid;
#define PW_FILTER_PID() cur_pid
#define PW_FILTER_TID() cur_pid
#define PW_FILTER_RUN_DECL static int
#include "filter_run.h"

/* Run the program with the BPF side's own interpreter, over fields given here. */
static bool run(const struct pw_filter *f, const int64_t *args, int64_t ret, int64_t pid,
		const char *comm)
{
	static struct pw_hit hit;

	memset(&hit, 0, sizeof(hit));
	for (int i = 0; i < 6; i++)
		hit.args[i] = (uint64_t)args[i];
	hit.ret = (uint64_t)ret;
	strncpy((char *)hit.comm, comm, sizeof(hit.comm) - 1);
	cur_pid = pid;
	return pw_filter_run(f, &hit);
}

static void test_programs_evaluate_like_the_expression(void **state)
{
	const int64_t a[6] = { 1, 7, -3, 0, 0, 0 }, b[6] = { 2, 7, 5, 0, 0, 0 };

	(void)state;
	one_probe("tracepoint:syscalls:sys_enter_write", false);
	assert_int_equal(compile("arg0 == 1"), 0);
	assert_int_equal(fs.mask, 1u << 1);
	assert_true(run(&fs.prog[1], a, 0, 0, "x"));
	assert_false(run(&fs.prog[1], b, 0, 0, "x"));
	assert_int_equal(compile("!(arg0 == 1) || arg2 < 0 && arg1 >= 7"), 0);
	assert_true(run(&fs.prog[1], a, 0, 0, "x")); /* arg2 < 0 && arg1 >= 7 */
	assert_true(run(&fs.prog[1], b, 0, 0, "x")); /* !(arg0 == 1) */
	assert_int_equal(compile("5 < arg2"), 0);    /* swapped: arg2 > 5 */
	assert_false(run(&fs.prog[1], b, 0, 0, "x"));
	assert_int_equal(compile("0x2 <= arg0 && comm == \"python3\" && pid != 4"), 0);
	assert_true(run(&fs.prog[1], b, 0, 9, "python3"));
	assert_false(run(&fs.prog[1], b, 0, 9, "bash"));
	assert_false(run(&fs.prog[1], b, 0, 4, "python3"));
}

static void test_fields_follow_the_probe(void **state)
{
	(void)state;
	one_probe("tracepoint:syscalls:sys_exit_write", false);
	assert_int_equal(compile("ret < 0"), 0);
	assert_int_equal(compile("arg0 == 1"), -EINVAL);
	assert_non_null(strstr(why, "has no arguments"));
	one_probe("uretprobe:libc.so.6:malloc", false);
	assert_int_equal(compile("ret == 0"), 0);
	one_probe("uprobe:libc.so.6:usleep", true);
	assert_int_equal(compile("ret == 0"), -EINVAL);
	assert_non_null(strstr(why, "without --latency"));
	assert_int_equal(compile("arg0 > 1000"), 0);
	one_probe("software:page-faults", false);
	assert_int_equal(compile("tid == 5 || comm != \"a\""), 0);
	assert_int_equal(compile("arg0 == 1"), -EINVAL);
}

static void test_tracepoint_fields_wait_for_the_sites(void **state)
{
	(void)state;
	/* before resolving, only the syntax: the fields come from tracefs later */
	one_probe("tracepoint:sched:sched_process_fork", false);
	assert_int_equal(compile("args.child_pid > 0 && pid == 4"), 0);
	assert_int_equal(fs.prog[1].insn[0].field, PW_FF_CTX);
	assert_int_equal(compile("args. > 0"), -EINVAL);
	assert_non_null(strstr(why, "after 'args.'"));
	one_probe("tracepoint:syscalls:sys_enter_write", false);
	assert_int_equal(compile("args.fd == 1"), -EINVAL);
	assert_non_null(strstr(why, "arg0..arg5"));
}

static void test_refusals(void **state)
{
	char big[1024] = "arg0 == 0";

	(void)state;
	one_probe("tracepoint:syscalls:sys_enter_write", false);
	assert_int_equal(compile("arg0 =="), -EINVAL);
	assert_string_equal(why, "--filter 'arg0 ==': expected an integer near ''");
	assert_int_equal(compile("size > 1"), -EINVAL);
	assert_non_null(strstr(why, "unknown field 'size'"));
	assert_int_equal(compile("arg0 == 1)"), -EINVAL);
	assert_non_null(strstr(why, "unexpected ')'"));
	assert_int_equal(compile("(arg0 == 1"), -EINVAL);
	assert_int_equal(compile("comm > \"a\""), -EINVAL);
	assert_int_equal(compile("comm == \"a_name_far_too_long\""), -EINVAL);
	assert_int_equal(compile("arg6 == 1"), -EINVAL);
	assert_int_equal(compile("arg0 == 99999999999999999999"), -EINVAL);
	assert_int_equal(compile(""), -EINVAL);
	for (int i = 0; i < 40; i++)
		strcat(big, " || arg0 == 1");
	assert_int_equal(compile(big), -EINVAL);
	assert_non_null(strstr(why, "too long"));
}

/* Nesting is parsed by recursion: a deep one must be refused, not overflow the stack. */
static void test_deep_nesting_is_refused(void **state)
{
	size_t n = 1u << 20;
	char *deep = malloc(n + sizeof("arg0 == 1"));

	(void)state;
	assert_non_null(deep);
	one_probe("tracepoint:syscalls:sys_enter_write", false);
	for (const char *opener = "(!"; *opener; opener++) {
		memset(deep, *opener, n);
		strcpy(deep + n, "arg0 == 1");
		assert_int_equal(compile(deep), -EINVAL);
		assert_non_null(strstr(why, "nested too deep"));
	}
	/* as deep as allowed still compiles */
	memset(deep, '(', 200);
	strcpy(deep + 200, "arg0 == 1");
	memset(deep + strlen(deep), ')', 200);
	deep[200 + strlen("arg0 == 1") + 200] = 0;
	assert_int_equal(compile(deep), 0);
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_programs_evaluate_like_the_expression),
		cmocka_unit_test(test_fields_follow_the_probe),
		cmocka_unit_test(test_tracepoint_fields_wait_for_the_sites),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_deep_nesting_is_refused),
	};

	return cmocka_run_group_tests_name("filter", tests, NULL, NULL);
}
