// SPDX-License-Identifier: MIT
/* Kernel frames through the whole userspace path: a kernel stack record and its sample
 * paired (user/symbolize/xstack.c), the record symbolized from a kallsyms file, the frames at the
 * leaf below the Python ones in every format; a sample whose stack record never came is
 * dropped under its own reason, a stack record without its sample is counted; a restricted
 * kallsyms gives "[kernel unsymbolized]" frames. */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "symbolize/xstack.h"

#define A_ENTRY 0xffffffff81000810ull
#define A_SYSCALL 0xffffffff81001040ull
#define A_READ 0xffffffff81003020ull
#define A_MODULE 0xffffffffc0a00010ull
#define A_BPF 0xffffffffc0c00040ull

static const char kallsyms_text[] = "ffffffff81000000 T _stext\n"
				    "ffffffff81000800 T entry_SYSCALL_64\n"
				    "ffffffff81001000 T do_syscall_64\n"
				    "ffffffff81003000 t vfs_read\n"
				    "ffffffffc0a00000 t nf_hook_slow\t[nf_tables]\n"
				    "ffffffffc0c00000 t bpf_prog_0123456789abcdef_x\t[bpf]\n";

static struct kallsyms *load_kallsyms(const char *text)
{
	char path[] = "/tmp/pywalk-kallsyms-XXXXXX";
	int fd = mkstemp(path);
	struct kallsyms *k;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	k = kallsyms__load(path, 0);
	unlink(path);
	assert_non_null(k);
	return k;
}

/* A sample of codes[0..n) (root first) at time t, with PW_SF_KSTACK, and its kernel stack
 * record of ips[0..nips) (leaf first), through the pairing into the profile. With
 * `ship_stack` false the stack record is left out (lost), with `ship_sample` false the
 * sample is. */
static void kernel_sample(struct fx *fx, struct xstack *xs, const uint64_t *codes, uint32_t n,
			  const uint64_t *ips, uint32_t nips, uint64_t t, bool ship_stack,
			  bool ship_sample)
{
	struct pw_kstack ks = { .hdr = { .kind = PW_REC_KSTACK,
					 .tid = (uint32_t)gettid(),
					 .time_ns = t,
					 .len = nips * 8 } };
	struct pw_sample_hdr *h;
	size_t size, out_size;
	const void *out;

	fx->time_ns = t;
	h = fx_record(fx, 0, 0, 0, codes, n, &size);
	h->flags = PW_SF_KSTACK;
	memcpy(ks.ips, ips, nips * 8);
	if (ship_stack)
		assert_int_equal(xstack__add_stack(xs, &ks, sizeof(ks.hdr) + nips * 8), 0);
	if (ship_sample) {
		assert_int_equal(xstack__pair(xs, h, size, &out, &out_size), 0);
		assert_int_equal(profile__add_record(fx->p, out, out_size), 0);
	}
	free(h);
}

static void test_kernel_frames_at_the_leaf_in_order(void **state)
{
	struct kallsyms *k = load_kallsyms(kallsyms_text);
	struct fx *fx = fx_new(&(struct profile_opts){ .ksyms = k }, "proc");
	struct xstack *xs = xstack__new();
	uint64_t mod = fx_code(fx, "<module>", "/app.py", 9);
	uint64_t loop = fx_code(fx, "read_loop", "/app.py", 4);
	/* leaf first, as bpf_get_stack gives it: the program's own frame, then the kernel */
	uint64_t ips[] = { A_BPF, A_READ, A_SYSCALL, A_ENTRY };
	uint64_t mod_ips[] = { A_MODULE, A_SYSCALL + 8, A_ENTRY };
	const struct xstack_stats *st = xstack__stats(xs);
	size_t len;
	char *out;

	(void)state;
	for (int i = 0; i < 3; i++)
		kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, ips, 4, 100 + i, true, true);
	kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, mod_ips, 3, 200, true, true);
	/* taken in user mode: an empty kernel stack, no kernel frames, no error */
	kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, NULL, 0, 300, true, true);
	/* the stack record lost: the sample is not counted, under its own reason */
	kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, ips, 4, 400, false, true);
	/* the sample lost (ring buffer full after its stack went): the stack is unpaired
	 * once the next one of the thread comes, or at the end */
	kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, ips, 4, 500, true, false);
	/* a stack record of another run (its sample lost) is not this sample's */
	kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, ips, 4, 600, true, false);
	kernel_sample(fx, xs, (uint64_t[]){ mod, loop }, 2, ips, 4, 601, false, true);
	xstack__flush(xs);

	assert_int_equal(st->paired, 5);
	assert_int_equal(st->missing, 2);
	assert_int_equal(st->unpaired, 2);
	assert_int_equal(profile__drops(fx->p)->n[PROFILE_DROP_NO_KSTACK], 2);
	assert_int_equal(agg__total(profile__agg(fx->p)), 5);

	out = fx_write(fx, out_folded_write, &len);
	assert_non_null(out);
	assert_string_equal(out,
			    "<module> (/app.py:9);read_loop (/app.py:4) 1\n"
			    "<module> (/app.py:9);read_loop (/app.py:4);entry_SYSCALL_64 [kernel];"
			    "do_syscall_64 [kernel];nf_hook_slow [kernel] 1\n"
			    "<module> (/app.py:9);read_loop (/app.py:4);entry_SYSCALL_64 [kernel];"
			    "do_syscall_64 [kernel];vfs_read [kernel] 3\n");
	free(out);

	/* speedscope: one frame per kernel function, whatever address ran */
	out = fx_write(fx, out_speedscope_write, &len);
	assert_non_null(out);
	assert_true(fx_json_valid(out, len));
	assert_non_null(strstr(out, "{\"name\":\"do_syscall_64 [kernel]\",\"file\":\"\"}"));
	assert_null(strstr(strstr(out, "do_syscall_64 [kernel]") + 1, "do_syscall_64 [kernel]"));
	free(out);

	/* the HTML page lists the kernel frames' names to colour them */
	out = fx_write(fx, out_html_write, &len);
	assert_non_null(out);
	assert_non_null(strstr(out, "\"kernel\":["));
	assert_null(strstr(out, "\"native\":["));
	assert_non_null(strstr(out, "\"vfs_read [kernel]\""));
	free(out);

	xstack__free(xs);
	fx_free(fx);
	kallsyms__free(k);
}

/* pprof: the kernel's Mapping, and each kernel Location at its real address in it */
static void test_kernel_frames_in_pprof(void **state)
{
	struct kallsyms *k = load_kallsyms(kallsyms_text);
	struct fx *fx = fx_new(&(struct profile_opts){ .ksyms = k }, "proc");
	struct xstack *xs = xstack__new();
	uint64_t mod = fx_code(fx, "<module>", "/app.py", 9);
	uint64_t ips[] = { A_READ, A_SYSCALL, A_ENTRY };
	char path[] = "/tmp/pywalk-test-XXXXXX.pb.gz", cmd[256];
	char *raw, *traces;

	(void)state;
	if (!fx_have_go())
		skip();
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 3, 100, true, true);
	fx_write_file(fx, out_pprof_write, path, 6);
	snprintf(cmd, sizeof(cmd), "go tool pprof -raw %s 2>&1", path);
	raw = fx_command_output(cmd);
	assert_non_null(strstr(raw, "0x8000000000000000/0xffffffffffffffff/0x0 [kernel.kallsyms]"));
	assert_non_null(strstr(raw, "0xffffffff81003020 M=1 vfs_read"));
	assert_non_null(strstr(raw, "0xffffffff81001040 M=1 do_syscall_64"));
	snprintf(cmd, sizeof(cmd), "go tool pprof -traces %s 2>&1", path);
	traces = fx_command_output(cmd);
	/* leaf first, as pprof prints a trace */
	assert_non_null(strstr(traces, "vfs_read\n             do_syscall_64\n"
				       "             entry_SYSCALL_64\n             <module>\n"));
	unlink(path);
	free(raw);
	free(traces);
	xstack__free(xs);
	fx_free(fx);
	kallsyms__free(k);
}

/* The agent's windows: a rotated profile and the one going on each name kernel frames */
static void test_kernel_frames_across_windows(void **state)
{
	struct kallsyms *k = load_kallsyms(kallsyms_text);
	struct fx *fx = fx_new(&(struct profile_opts){ .ksyms = k }, "proc");
	struct xstack *xs = xstack__new();
	uint64_t mod = fx_code(fx, "<module>", "/app.py", 9);
	uint64_t ips[] = { A_READ, A_SYSCALL, A_ENTRY };
	const char *want = "<module> (/app.py:9);entry_SYSCALL_64 [kernel];do_syscall_64 [kernel];"
			   "vfs_read [kernel] 2\n";
	struct profile *w;
	size_t len;
	char *out;

	(void)state;
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 3, 100, true, true);
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 3, 101, true, true);
	w = profile__rotate(fx->p);
	assert_non_null(w);
	/* twice: the second time its addresses are in the window's own frame cache */
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 3, 200, true, true);
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 3, 201, true, true);
	out = fx_write(fx, out_folded_write, &len);
	assert_string_equal(out, want);
	free(out);
	{
		struct profile *live = fx->p;

		fx->p = w;
		out = fx_write(fx, out_folded_write, &len);
		fx->p = live;
		assert_string_equal(out, want);
		free(out);
	}
	profile__free(w);
	xstack__free(xs);
	fx_free(fx);
	kallsyms__free(k);
}

/* kptr_restrict: every address hidden, every kernel frame says so */
static void test_restricted_kallsyms_gives_unsymbolized_frames(void **state)
{
	struct kallsyms *k = load_kallsyms("0000000000000000 T _stext\n"
					   "0000000000000000 T do_syscall_64\n");
	struct fx *fx = fx_new(&(struct profile_opts){ .ksyms = k }, "proc");
	struct xstack *xs = xstack__new();
	uint64_t mod = fx_code(fx, "<module>", "/app.py", 9);
	uint64_t ips[] = { A_READ, A_ENTRY };
	size_t len;
	char *out;

	(void)state;
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 2, 100, true, true);
	out = fx_write(fx, out_folded_write, &len);
	assert_string_equal(out, "<module> (/app.py:9);[kernel unsymbolized] [kernel];"
				 "[kernel unsymbolized] [kernel] 1\n");
	free(out);
	xstack__free(xs);
	fx_free(fx);
	kallsyms__free(k);
}

/* An address outside every symbol keeps its address in its name */
static void test_unknown_address_is_named_by_it(void **state)
{
	struct kallsyms *k = load_kallsyms(kallsyms_text);
	struct fx *fx = fx_new(&(struct profile_opts){ .ksyms = k }, "proc");
	struct xstack *xs = xstack__new();
	uint64_t mod = fx_code(fx, "<module>", "/app.py", 9);
	uint64_t ips[] = { 0xffffffff80001234ull };
	size_t len;
	char *out;

	(void)state;
	kernel_sample(fx, xs, (uint64_t[]){ mod }, 1, ips, 1, 100, true, true);
	out = fx_write(fx, out_folded_write, &len);
	assert_string_equal(out, "<module> (/app.py:9);[unknown]+0xffffffff80001234 [kernel] 1\n");
	free(out);
	xstack__free(xs);
	fx_free(fx);
	kallsyms__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_frames_at_the_leaf_in_order),
		cmocka_unit_test(test_kernel_frames_in_pprof),
		cmocka_unit_test(test_kernel_frames_across_windows),
		cmocka_unit_test(test_restricted_kallsyms_gives_unsymbolized_frames),
		cmocka_unit_test(test_unknown_address_is_named_by_it),
	};

	prctl(PR_SET_NAME, "test_kframes", 0, 0, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
