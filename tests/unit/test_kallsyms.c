// SPDX-License-Identifier: MIT
/* /proc/kallsyms parsing and lookup: text symbols only, sorted whatever the file's order,
 * module symbols with their module, the nearest symbol at or below an address, a file
 * whose addresses are all zero (kptr_restrict) names nothing, the byte budget, and the
 * frames of the BPF program that took the stack are told apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "symbolize/kallsyms.h"

/* A kallsyms file with `text` as its contents; its path in `path`. */
static void write_file(char *path, const char *text)
{
	int fd;

	strcpy(path, "/tmp/pywalk-kallsyms-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static const char sample_file[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81001000 T do_syscall_64\n"
	"ffffffff81002000 D some_data\n" /* data: never a return address */
	"ffffffff81003000 t vfs_read\n"
	"ffffffffc0a00000 t nf_hook_slow\t[nf_tables]\n"
	"ffffffffc0a00100 t nft_do_chain\t[nf_tables]\n"
	"ffffffffc0b00000 t ext4_readdir\t[ext4]\n"
	"ffffffff81000800 T entry_SYSCALL_64\n" /* out of order, as modules' are */
	"ffffffffc0c00000 t bpf_prog_0123456789abcdef_sample\t[bpf]\n"
	"ffffffff81004000 T bpf_trace_run4\n"
	"garbage line\n";

static void test_lookup_names_the_nearest_symbol_below(void **state)
{
	char path[64];
	struct kallsyms *k;
	struct kallsyms_hit hit;

	(void)state;
	write_file(path, sample_file);
	k = kallsyms__load(path, 0);
	unlink(path);
	assert_non_null(k);
	assert_false(kallsyms__stats(k)->restricted);
	/* 9 text symbols; the data symbol and the garbage line skipped */
	assert_int_equal(kallsyms__stats(k)->symbols, 9);
	assert_int_equal(kallsyms__stats(k)->skipped, 2);

	assert_true(kallsyms__lookup(k, 0xffffffff81001234ull, &hit));
	assert_string_equal(hit.name, "do_syscall_64");
	assert_string_equal(hit.module, "");
	assert_int_equal(hit.offset, 0x234);
	/* exactly at a symbol */
	assert_true(kallsyms__lookup(k, 0xffffffff81000800ull, &hit));
	assert_string_equal(hit.name, "entry_SYSCALL_64");
	assert_int_equal(hit.offset, 0);
	/* inside the data symbol's range: the text symbol before it */
	assert_true(kallsyms__lookup(k, 0xffffffff81002010ull, &hit));
	assert_string_equal(hit.name, "do_syscall_64");
	/* module symbols carry their module, each its own */
	assert_true(kallsyms__lookup(k, 0xffffffffc0a00180ull, &hit));
	assert_string_equal(hit.name, "nft_do_chain");
	assert_string_equal(hit.module, "nf_tables");
	assert_true(kallsyms__lookup(k, 0xffffffffc0b00010ull, &hit));
	assert_string_equal(hit.name, "ext4_readdir");
	assert_string_equal(hit.module, "ext4");
	/* below the first symbol: unknown */
	assert_false(kallsyms__lookup(k, 0xffffffff80000000ull, &hit));
	assert_int_equal(kallsyms__first(k), 0xffffffff81000000ull);

	/* the program that took the stack and its tracepoint glue are pywalk's own */
	assert_true(kallsyms__is_bpf_glue(k, 0xffffffffc0c00040ull));
	assert_true(kallsyms__is_bpf_glue(k, 0xffffffff81004010ull));
	assert_false(kallsyms__is_bpf_glue(k, 0xffffffff81003010ull));
	assert_false(kallsyms__is_bpf_glue(k, 0xffffffffc0a00010ull));
	kallsyms__free(k);
}

static void test_restricted_file_names_nothing(void **state)
{
	char path[64];
	struct kallsyms *k;
	struct kallsyms_hit hit;

	(void)state;
	/* what kptr_restrict=2 (or a reader without CAP_SYSLOG) sees */
	write_file(path, "0000000000000000 T _stext\n"
			 "0000000000000000 T do_syscall_64\n"
			 "0000000000000000 t nf_hook_slow\t[nf_tables]\n");
	k = kallsyms__load(path, 0);
	unlink(path);
	assert_non_null(k);
	assert_true(kallsyms__stats(k)->restricted);
	assert_int_equal(kallsyms__stats(k)->symbols, 0);
	assert_false(kallsyms__lookup(k, 0, &hit));
	assert_false(kallsyms__lookup(k, 0xffffffff81001234ull, &hit));
	kallsyms__free(k);
}

static void test_budget_leaves_symbols_out_and_counts_them(void **state)
{
	char path[64];
	struct kallsyms *k;
	FILE *f;
	int fd;

	(void)state;
	strcpy(path, "/tmp/pywalk-kallsyms-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	for (int i = 0; i < 100000; i++)
		fprintf(f, "ffffffff8%07x T function_number_%d\n", i * 16, i);
	fclose(f);
	k = kallsyms__load(path, 256 << 10);
	unlink(path);
	assert_non_null(k);
	assert_true(kallsyms__stats(k)->over_budget > 0);
	assert_int_equal(kallsyms__stats(k)->symbols + kallsyms__stats(k)->over_budget, 100000);
	assert_true(kallsyms__stats(k)->bytes <= 256 << 10);
	kallsyms__free(k);
}

static void test_missing_file_is_null(void **state)
{
	(void)state;
	assert_null(kallsyms__load("/nonexistent/kallsyms", 0));
}

/* The running kernel's own file, when it shows addresses: its entry code is there. */
static void test_live_kallsyms(void **state)
{
	struct kallsyms *k = kallsyms__load(KALLSYMS_PATH, 0);
	struct kallsyms_hit hit;

	(void)state;
	if (!k || kallsyms__stats(k)->restricted) {
		printf("skipped: %s unreadable or restricted here\n", KALLSYMS_PATH);
		kallsyms__free(k);
		return;
	}
	assert_true(kallsyms__stats(k)->symbols > 1000);
	assert_true(kallsyms__lookup(k, kallsyms__first(k), &hit));
	assert_int_equal(hit.offset, 0);
	kallsyms__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_names_the_nearest_symbol_below),
		cmocka_unit_test(test_restricted_file_names_nothing),
		cmocka_unit_test(test_budget_leaves_symbols_out_and_counts_them),
		cmocka_unit_test(test_missing_file_is_null),
		cmocka_unit_test(test_live_kallsyms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
