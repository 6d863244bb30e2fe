// SPDX-License-Identifier: MIT
/* trace's probe specs: every kind splits into the parts the resolver needs, and every
 * malformed spec is refused with a sentence that names it. */
#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "trace/probe.h"

static struct probe_spec p;
static char why[512];

static int parse(const char *text)
{
	why[0] = 0;
	return probe_parse(text, &p, why, sizeof(why));
}

static void test_tracepoints(void **state)
{
	(void)state;
	assert_int_equal(parse("tracepoint:sched:sched_switch"), 0);
	assert_int_equal(p.kind, PROBE_TRACEPOINT);
	assert_string_equal(p.where, "sched");
	assert_string_equal(p.what, "sched_switch");
	assert_int_equal(parse("t:sched:sched_*"), 0);
	assert_true(probe_is_pattern(p.what));
	assert_int_equal(parse("tracepoint:sched"), -EINVAL);
	assert_non_null(strstr(why, "tracepoint:CATEGORY:NAME"));
	assert_int_equal(parse("tracepoint:a:b:c"), -EINVAL);
	assert_int_equal(parse("tracepoint:sch/ed:x"), -EINVAL);
}

static void test_syscalls_go_by_number(void **state)
{
	(void)state;
	assert_int_equal(parse("tracepoint:syscalls:sys_enter_openat"), 0);
	assert_int_equal(p.kind, PROBE_SYSCALL);
	assert_false(p.exit);
	assert_string_equal(p.what, "openat");
	assert_true(probe_has_args(&p));
	assert_false(probe_has_ret(&p));
	assert_int_equal(parse("tracepoint:syscalls:sys_exit_*open*"), 0);
	assert_true(p.exit);
	assert_string_equal(p.what, "*open*");
	assert_true(probe_has_ret(&p));
	assert_int_equal(parse("tracepoint:syscalls:*open*"), -EINVAL);
	assert_non_null(strstr(why, "sys_enter_NAME"));
	assert_int_equal(parse("tracepoint:syscalls:sys_enter_"), -EINVAL);
}

static void test_uprobes(void **state)
{
	(void)state;
	assert_int_equal(parse("uprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:malloc"), 0);
	assert_int_equal(p.kind, PROBE_UPROBE);
	assert_string_equal(p.where, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_string_equal(p.what, "malloc");
	assert_int_equal(p.offset, 0);
	assert_int_equal(parse("uprobe:libssl.so.3:SSL_read+0x10"), 0);
	assert_string_equal(p.where, "libssl.so.3");
	assert_string_equal(p.what, "SSL_read");
	assert_int_equal(p.offset, 16);
	assert_int_equal(parse("uretprobe:libc.so.6:usleep"), 0);
	assert_int_equal(p.kind, PROBE_URETPROBE);
	assert_int_equal(parse("uretprobe:libc.so.6:usleep+4"), -EINVAL);
	assert_non_null(strstr(why, "no +OFFSET"));
	assert_int_equal(parse("uprobe:libc.so.6:mal*"), -EINVAL);
	assert_non_null(strstr(why, "wildcards"));
	assert_int_equal(parse("uprobe:libc.so.6:"), -EINVAL);
	assert_int_equal(parse("uprobe:malloc"), -EINVAL);
	assert_int_equal(parse("uprobe:libc.so.6:f+zz"), -EINVAL);
	assert_non_null(strstr(why, "invalid offset"));
}

static void test_usdt(void **state)
{
	(void)state;
	assert_int_equal(parse("usdt:/usr/bin/python3.11:python:gc__start"), 0);
	assert_int_equal(p.kind, PROBE_USDT);
	assert_string_equal(p.where, "/usr/bin/python3.11");
	assert_string_equal(p.what, "python");
	assert_string_equal(p.name, "gc__start");
	assert_int_equal(parse("usdt:/usr/bin/python3.11:gc__start"), -EINVAL);
	assert_non_null(strstr(why, "usdt:PATH:PROVIDER:NAME"));
	assert_int_equal(parse("usdt:x:python:*"), -EINVAL);
}

static void test_kprobes_parse(void **state)
{
	(void)state;
	/* existence (and the kernel's support) is the resolver's business */
	assert_int_equal(parse("kprobe:do_sys_openat2"), 0);
	assert_int_equal(p.kind, PROBE_KPROBE);
	assert_string_equal(p.what, "do_sys_openat2");
	assert_int_equal(parse("kretprobe:do_sys_openat2"), 0);
	assert_int_equal(p.kind, PROBE_KRETPROBE);
	assert_int_equal(parse("kprobe:"), -EINVAL);
}

static void test_perf_events(void **state)
{
	(void)state;
	assert_int_equal(parse("software:page-faults"), 0);
	assert_int_equal(p.kind, PROBE_SOFTWARE);
	assert_int_equal(p.perf_type, PERF_TYPE_SOFTWARE);
	assert_int_equal(p.perf_config, PERF_COUNT_SW_PAGE_FAULTS);
	assert_int_equal(p.period, 1);
	assert_false(p.freq);
	assert_int_equal(parse("software:cpu-clock"), 0);
	assert_true(p.freq);
	assert_int_equal(p.period, 99);
	assert_int_equal(parse("software:cpu-clock:999hz"), 0);
	assert_true(p.freq);
	assert_int_equal(p.period, 999);
	assert_int_equal(parse("software:context-switches:10"), 0);
	assert_false(p.freq);
	assert_int_equal(p.period, 10);
	assert_int_equal(parse("hardware:cycles"), 0);
	assert_int_equal(p.perf_type, PERF_TYPE_HARDWARE);
	assert_int_equal(p.period, 1000000);
	assert_int_equal(parse("software:cycles"), -EINVAL);
	assert_non_null(strstr(why, "unknown software event 'cycles'"));
	assert_int_equal(parse("software:page-faults:0"), -EINVAL);
	assert_int_equal(parse("software:cpu-clock:200000hz"), -EINVAL);
	assert_int_equal(parse("software:page-faults:x"), -EINVAL);
	assert_false(probe_has_args(&(struct probe_spec){ .kind = PROBE_SOFTWARE }));
}

static void test_bad_types_and_text(void **state)
{
	(void)state;
	assert_int_equal(parse("fentry:vfs_read"), -EINVAL);
	assert_non_null(strstr(why, "unknown probe type in 'fentry:vfs_read'"));
	assert_int_equal(parse("openat"), -EINVAL);
	assert_non_null(strstr(why, "unknown probe type"));
	assert_int_equal(parse("uprobe:/a b:f"), -EINVAL);
	assert_int_equal(parse("uprobe:/a\x1b[31m:f"), -EINVAL);
	char big[2000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, "uprobe:", 7);
	assert_int_equal(parse(big), -EINVAL);
	assert_non_null(strstr(why, "too long"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tracepoints),
		cmocka_unit_test(test_syscalls_go_by_number),
		cmocka_unit_test(test_uprobes),
		cmocka_unit_test(test_usdt),
		cmocka_unit_test(test_kprobes_parse),
		cmocka_unit_test(test_perf_events),
		cmocka_unit_test(test_bad_types_and_text),
	};

	return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
