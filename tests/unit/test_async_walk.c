// SPDX-License-Identifier: MIT
/* The --async chain walk (bpf/async.h) over synthetic memory images: a running task awaited
 * by a task whose coroutines await one another, itself awaited by a set of three (the
 * chain goes on with the lowest address, the other two counted); names as str and as int;
 * and each way a chain is refused: a ring of tasks, a task of another loop, too many
 * tasks, a set too wide, a task that changed under the read, an unreadable name. */
#include <stdbool.h>

#include "synth_mem.h"
#include "async.h"

/* A layout of our own: what matters is that the walk reads every field where the offsets
 * say, never where a real build happens to put it. */
static struct pw_proc cfg;
static struct pw_async_off o;
static struct pw_asyncmem amem;
static struct pw_walkmem wmem;
static uint64_t str_type, int_type, coro_type, task_type, loop;

#define OB_TYPE 8
#define GEN_IFRAME 64

static int reset(void **state)
{
	(void)state;
	mem_reset();
	memset(&cfg, 0, sizeof(cfg));
	cfg.off.frame_code = 0;
	cfg.off.frame_previous = 8;
	cfg.off.frame_instr = 56;
	cfg.off.frame_owner = 74;
	cfg.off.frame_read_size = 80;
	cfg.off.code_adaptive = 208;
	cfg.off.code_tag = PW_OFF_NONE;
	cfg.code_tag_bits = 2;
	cfg.code_tag_name = 0xff;
	cfg.obj.str_length = 16;
	cfg.obj.str_state = 32;
	cfg.obj.str_ascii_data = 40;
	cfg.obj.str_compact_data = 56;
	cfg.obj.str_kind_shift = 2;
	o = (struct pw_async_off){ .target = 1,
				   .ts_running_loop = 400,
				   .ts_running_task = 408,
				   .task_read = 160,
				   .task_loop = 16,
				   .task_name = 136,
				   .task_awaited_by = 96,
				   .task_is_task = 108,
				   .task_awaited_by_is_set = 109,
				   .task_coro = 128,
				   .ob_type = OB_TYPE,
				   .tp_flags = 168,
				   .long_lv_tag = 16,
				   .long_digit = 24,
				   .gen_iframe = GEN_IFRAME,
				   .gen_frame_state = 48,
				   .gen_read = GEN_IFRAME + 80,
				   .frame_stackpointer = 64,
				   .set_used = 24,
				   .set_mask = 32,
				   .set_table = 40,
				   .fs_yield_from = -1,
				   .fs_yield_from_locked = -1,
				   .fs_finished = 1,
				   .await_slot = 1,
				   .owner_generator = 1 };
	str_type = mem_alloc(256);
	put64(str_type + o.tp_flags, 1ull << 28);
	int_type = mem_alloc(256);
	put64(int_type + o.tp_flags, 1ull << 24);
	coro_type = mem_alloc(256);
	task_type = mem_alloc(256);
	loop = mem_alloc(64);
	return 0;
}

static uint64_t str_obj(const char *s)
{
	uint64_t a = mem_alloc(64 + strlen(s));

	put64(a + OB_TYPE, str_type);
	put64(a + cfg.obj.str_length, strlen(s));
	/* compact (bit 5), ascii (bit 6), kind 1 (bits 2-4) */
	put32(a + cfg.obj.str_state, 1u << 5 | 1u << 6 | 1u << 2);
	memcpy(mem + (a + cfg.obj.str_ascii_data - MEM_BASE), s, strlen(s));
	return a;
}

static uint64_t int_obj(uint64_t v)
{
	uint64_t a = mem_alloc(64);

	put64(a + OB_TYPE, int_type);
	put64(a + o.long_lv_tag, (v < (1u << 30) ? 1ull : 2ull) << 3); /* positive */
	put32(a + o.long_digit, (uint32_t)(v & 0x3fffffff));
	put32(a + o.long_digit + 4, (uint32_t)(v >> 30));
	return a;
}

/* A coroutine suspended at instruction `instr` of code object `code`, awaiting `awaited`
 * (0: nothing, suspended in a plain yield). */
static uint64_t coro(uint64_t code, uint32_t instr, uint64_t awaited)
{
	uint64_t c = mem_alloc(GEN_IFRAME + 96), f = c + GEN_IFRAME, stack = mem_alloc(32);

	put64(c + OB_TYPE, coro_type);
	put8(c + o.gen_frame_state, (uint8_t)(awaited ? o.fs_yield_from : -2));
	put64(f + cfg.off.frame_code, code | 1); /* a tagged _PyStackRef */
	put64(f + cfg.off.frame_instr, code + cfg.off.code_adaptive + 2ull * instr);
	put8(f + cfg.off.frame_owner, o.owner_generator);
	put64(stack, awaited);
	put64(f + o.frame_stackpointer, stack + 8);
	return c;
}

static uint64_t task(uint64_t name, uint64_t coro_addr, uint64_t awaited_by, bool is_set)
{
	uint64_t t = mem_alloc(o.task_read);

	put64(t + OB_TYPE, task_type);
	put64(t + o.task_loop, loop);
	put64(t + o.task_name, name);
	put64(t + o.task_coro, coro_addr);
	put64(t + o.task_awaited_by, awaited_by);
	put8(t + o.task_is_task, 1);
	put8(t + o.task_awaited_by_is_set, is_set);
	return t;
}

/* A set of `n` awaiters in a table of 8 entries, with a removed entry among them. */
static uint64_t set_of(const uint64_t *awaiters, int n)
{
	uint64_t s = mem_alloc(64), table = mem_alloc(8 * 16);

	put64(s + o.set_used, (uint64_t)n);
	put64(s + o.set_mask, 7);
	put64(s + o.set_table, table);
	put64(table + 16, 0xdead0); /* removed: hash -1 */
	put64(table + 24, ~0ull);
	for (int i = 0; i < n; i++) {
		put64(table + 16 * (2 + 2 * i), awaiters[i]);
		put64(table + 16 * (2 + 2 * i) + 8, 0x1234 + i);
	}
	return s;
}

static uint64_t thread_state(uint64_t running)
{
	uint64_t ts = mem_alloc(512);

	put64(ts + o.ts_running_loop, loop);
	put64(ts + o.ts_running_task, running);
	return ts;
}

/* Run the walk as the sampler does: begin, then steps up to the bound. */
static uint8_t run(struct pw_async *a, uint64_t ts)
{
	int r = pw_async_begin(a, &o, ts);

	if (r <= 0)
		return r < 0 ? a->outcome : PW_OUT_EMPTY;
	for (int i = 0; i < PW_ASYNC_STEPS; i++)
		if (pw_async_step(a, &cfg, &o, &amem, &wmem))
			break;
	if (a->outcome != PW_OUT__CONTINUE)
		return a->outcome;
	if (a->phase != PW_APH_DONE)
		return PW_OUT_ASYNC_BOUND;
	return pw_async_recheck(a, &o, ts);
}

static void test_no_running_task_is_no_chain(void **state)
{
	struct pw_async a;

	(void)state;
	assert_int_equal(run(&a, thread_state(0)), PW_OUT_EMPTY);
}

static void test_chain_through_coroutines_and_a_set(void **state)
{
	uint64_t code_r = mem_alloc(512), code_a1 = mem_alloc(512), code_a2 = mem_alloc(512),
		 code_b = mem_alloc(512);
	uint64_t b[3], c_r, c_a2, c_a1, t_r, t_a, ts;
	struct pw_async a;

	(void)state;
	/* three awaiters of A; b[1] at the lowest address */
	b[1] = task(str_obj("waiter-low"), coro(code_b, 7, 0), 0, false);
	b[0] = task(str_obj("waiter-0"), coro(code_b, 7, 0), 0, false);
	b[2] = task(str_obj("waiter-2"), coro(code_b, 7, 0), 0, false);
	c_r = coro(code_r, 3, 0);
	t_r = mem_alloc(o.task_read);  /* filled below: A's inner coroutine awaits it */
	c_a2 = coro(code_a2, 11, t_r); /* awaits the running task: a task, so the end */
	c_a1 = coro(code_a1, 5, c_a2);
	t_a = task(int_obj(7), c_a1, set_of(b, 3), true);
	put64(t_r + OB_TYPE, task_type);
	put64(t_r + o.task_loop, loop);
	put64(t_r + o.task_name, str_obj("running"));
	put64(t_r + o.task_coro, c_r);
	put64(t_r + o.task_awaited_by, t_a);
	put8(t_r + o.task_is_task, 1);
	ts = thread_state(t_r);

	assert_int_equal(run(&a, ts), PW_OUT__CONTINUE);
	assert_int_equal(a.coro_frame, c_r + GEN_IFRAME);
	assert_int_equal(a.ntasks, 3);
	assert_int_equal(a.nframes, 3);
	/* running's mark; A's coroutines outermost first and its mark; b[1]'s and its mark */
	assert_int_equal(a.nblock, 6);
	assert_int_equal(amem.block[0].instr, PW_INSTR_TASK);
	assert_int_equal(amem.block[0].code, t_r);
	assert_int_equal(amem.block[0].tag, 0);
	assert_int_equal(amem.block[1].code, code_a1);
	assert_int_equal(amem.block[1].instr, 5);
	assert_int_equal(amem.block[2].code, code_a2);
	assert_int_equal(amem.block[2].instr, 11);
	assert_int_equal(amem.block[3].instr, PW_INSTR_TASK);
	assert_int_equal(amem.block[3].code, t_a);
	assert_int_equal(amem.block[3].tag, 1);
	assert_int_equal(amem.block[4].code, code_b);
	assert_int_equal(amem.block[5].code, b[1]);
	assert_int_equal(amem.block[5].tag, 2);
	assert_int_equal(amem.names[0].kind, 1);
	assert_int_equal(amem.names[0].length, 7);
	assert_memory_equal(amem.names[0].data, "running", 7);
	assert_int_equal(amem.names[1].kind, PW_TASK_NAME_INT);
	assert_int_equal(amem.names[1].value, 7);
	assert_int_equal(amem.names[1].awaiters, 2); /* the other two of the set */
	assert_memory_equal(amem.names[2].data, "waiter-low", 10);
	assert_int_equal(amem.names[2].awaiters, 0);

	/* the same with the str and int types known: their flags are not read (cleared here,
	 * they would say neither), and the names come whole */
	o.str_type = str_type;
	o.long_type = int_type;
	put64(str_type + o.tp_flags, 0);
	put64(int_type + o.tp_flags, 0);
	memset(&amem, 0xa5, sizeof(amem));
	assert_int_equal(run(&a, ts), PW_OUT__CONTINUE);
	assert_int_equal(a.ntasks, 3);
	assert_int_equal(a.nblock, 6);
	assert_int_equal(amem.names[0].kind, 1);
	assert_memory_equal(amem.names[0].data, "running", 7);
	assert_int_equal(amem.names[1].kind, PW_TASK_NAME_INT);
	assert_int_equal(amem.names[1].value, 7);
	assert_memory_equal(amem.names[2].data, "waiter-low", 10);
}

/* A name longer than what one read brings with its head: its characters read apart, cut
 * at what a sample carries; its length whole. */
static void test_long_name_is_read_apart_and_cut(void **state)
{
	char name[200];
	uint64_t code = mem_alloc(512), t_r, ts;
	struct pw_async a;

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	o.str_type = str_type;
	t_r = task(str_obj(name), coro(code, 1, 0), 0, false);
	assert_int_equal(run(&a, thread_state(t_r)), PW_OUT__CONTINUE);
	assert_int_equal(amem.names[0].kind, 1);
	assert_int_equal(amem.names[0].length, sizeof(name) - 1);
	assert_memory_equal(amem.names[0].data, name, PW_TASK_NAME_MAX);

	/* a short name at the very end of the memory: the long read fails, the head alone
	 * holds it */
	t_r = task(0, coro(code, 1, 0), 0, false);
	ts = thread_state(t_r);
	put64(t_r + o.task_name, str_obj("tail"));
	assert_true(mem_read(amem.obj, PW_ASYNC_NAME_READ, MEM_BASE + mem_used - 80) != 0);
	assert_int_equal(run(&a, ts), PW_OUT__CONTINUE);
	assert_int_equal(amem.names[0].length, 4);
	assert_memory_equal(amem.names[0].data, "tail", 4);
}

static void test_ring_of_tasks_is_a_cycle(void **state)
{
	uint64_t code = mem_alloc(512), t_r, t_a;
	struct pw_async a;

	(void)state;
	/* r awaited by a, a awaited by r */
	t_r = task(str_obj("r"), coro(code, 1, 0), 0, false);
	t_a = task(str_obj("a"), coro(code, 1, 0), t_r, false);
	put64(t_r + o.task_awaited_by, t_a);
	assert_int_equal(run(&a, thread_state(t_r)), PW_OUT_ASYNC_CYCLE);
}

static void test_awaiter_of_another_loop_is_refused(void **state)
{
	uint64_t code = mem_alloc(512), t_a, t_r;
	struct pw_async a;

	(void)state;
	t_a = task(str_obj("elsewhere"), coro(code, 1, 0), 0, false);
	put64(t_a + o.task_loop, mem_alloc(64));
	t_r = task(str_obj("r"), coro(code, 1, 0), t_a, false);
	assert_int_equal(run(&a, thread_state(t_r)), PW_OUT_ASYNC_LOOP);
}

static void test_chain_longer_than_the_bound_is_refused(void **state)
{
	uint64_t code = mem_alloc(512), next = 0;
	struct pw_async a;

	(void)state;
	for (int i = 0; i <= PW_ASYNC_MAX_TASKS; i++)
		next = task(str_obj("t"), coro(code, 1, 0), next, false);
	assert_int_equal(run(&a, thread_state(next)), PW_OUT_ASYNC_BOUND);
}

static void test_set_wider_than_the_scan_is_refused(void **state)
{
	uint64_t code = mem_alloc(512), b = task(str_obj("b"), coro(code, 1, 0), 0, false);
	uint64_t s = set_of(&b, 1), t_r;
	struct pw_async a;

	(void)state;
	put64(s + o.set_mask, 2 * PW_ASYNC_SET_SCAN - 1);
	t_r = task(str_obj("r"), coro(code, 1, 0), s, true);
	assert_int_equal(run(&a, thread_state(t_r)), PW_OUT_ASYNC_BOUND);
}

static void test_task_that_changed_under_the_read_is_refused(void **state)
{
	uint64_t code = mem_alloc(512), t_r = task(str_obj("r"), coro(code, 1, 0), 0, false);
	uint64_t ts = thread_state(t_r), other = task(str_obj("o"), coro(code, 1, 0), 0, false);
	struct pw_async a;

	(void)state;
	/* its coroutine replaced between the frame walk and the chain's read */
	assert_int_equal(pw_async_begin(&a, &o, ts), 1);
	put64(t_r + o.task_coro, coro(code, 2, 0));
	assert_int_equal(pw_async_step(&a, &cfg, &o, &amem, &wmem), 1);
	assert_int_equal(a.outcome, PW_OUT_ASYNC_CHANGED);
	/* another task running by the end of the read */
	assert_int_equal(pw_async_begin(&a, &o, ts), 1);
	put64(t_r + o.task_coro, a.coro_frame - GEN_IFRAME);
	for (int i = 0; i < 4 && !pw_async_step(&a, &cfg, &o, &amem, &wmem); i++)
		;
	assert_int_equal(a.outcome, PW_OUT__CONTINUE);
	put64(ts + o.ts_running_task, other);
	assert_int_equal(pw_async_recheck(&a, &o, ts), PW_OUT_ASYNC_CHANGED);
}

static void test_unreadable_name_is_a_fault(void **state)
{
	uint64_t code = mem_alloc(512), t_r = task(0x8, coro(code, 1, 0), 0, false);
	struct pw_async a;

	(void)state;
	assert_int_equal(run(&a, thread_state(t_r)), PW_OUT_ASYNC_FAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_no_running_task_is_no_chain, reset),
		cmocka_unit_test_setup(test_chain_through_coroutines_and_a_set, reset),
		cmocka_unit_test_setup(test_long_name_is_read_apart_and_cut, reset),
		cmocka_unit_test_setup(test_ring_of_tasks_is_a_cycle, reset),
		cmocka_unit_test_setup(test_awaiter_of_another_loop_is_refused, reset),
		cmocka_unit_test_setup(test_chain_longer_than_the_bound_is_refused, reset),
		cmocka_unit_test_setup(test_set_wider_than_the_scan_is_refused, reset),
		cmocka_unit_test_setup(test_task_that_changed_under_the_read_is_refused, reset),
		cmocka_unit_test_setup(test_unreadable_name_is_a_fault, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
