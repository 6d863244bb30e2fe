/* SPDX-License-Identifier: MIT */
/* --async (CPython 3.14+): the asyncio task a sampled thread is running and the tasks that
 * await it, read where the sample is taken. The thread is stopped there, and a loop's tasks
 * change only in the loop's own thread, so what is read is one instant's chain. Written
 * once as plain C over the read hook, like walk.h, so the BPF program and the unit tests
 * run the same code; each function does one bounded step and the caller loops.
 *
 * pw_async_begin reads the thread's running loop and task and where the task's coroutine
 * frame is (the frame walk finds it on the thread's stack: the task's own frames run from
 * the leaf down to it). pw_async_step then goes up the chain one step at a time: a task
 * (is it a task of this loop, not seen before in the chain? its name, who awaits it), a
 * coroutine of an awaiting task (its frame, and what it awaits while it is a coroutine of
 * the same type), or a chunk of an awaiters set (the chain goes on with the awaiter at the
 * lowest address: stable while the awaiters are the same, so a gather that hangs is drawn
 * along one path; the others are counted). Everything read is untrusted: every walk is
 * bounded, and a chain that loops, leaves its loop, changes or cannot be read rejects the
 * sample with its own reason. */
#ifndef PW_ASYNC_H
#define PW_ASYNC_H

#include "abi.h"
#include "walk.h"

#define PW_ASYNC_BLOCK_BUF 512
/* Bytes of a task name read at once (its header, then as many characters as fit); a
 * name whose object is shorter than that, at the end of a mapping, is read in two. */
#define PW_ASYNC_NAME_READ 160
#define PW_ASYNC_NAME_HEAD 64
_Static_assert(PW_ASYNC_BLOCK <= PW_ASYNC_BLOCK_BUF, "the block fits its buffer");

enum pw_async_phase {
	PW_APH_TASK = 0, /* read task `next` */
	PW_APH_CORO,	 /* read coroutine `coro` of the task read last */
	PW_APH_SET,	 /* scan the awaiters set of the task read last */
	PW_APH_DONE,
};

/* What one async walk reads into, too big for the BPF stack (a per-CPU scratch slot). */
struct pw_asyncmem {
	__u64 task[PW_ASYNC_TASK_READ / 8];
	/* a coroutine, with room for a whole frame image past its end, so that the frame's
	 * loads (bounded by PW_FRAME_READ_MAX) stay inside the buffer */
	__u64 gen[(PW_ASYNC_GEN_READ + PW_FRAME_READ_MAX) / 8];
	/* a task name's object: its head and, for a short name, its characters, in one read */
	__u64 obj[PW_ASYNC_NAME_READ / 8];
	__u64 set[PW_ASYNC_SET_CHUNK * 2]; /* (key, hash) entries of an awaiters set */
	/* marks and awaiting tasks' frames (at most PW_ASYNC_BLOCK: a power of two above it
	 * lets every index be masked into the buffer) */
	struct pw_frame block[PW_ASYNC_BLOCK_BUF];
	struct pw_task_name names[PW_ASYNC_MAX_TASKS];
};

struct pw_async {
	__u64 loop;	  /* the thread's running loop */
	__u64 running;	  /* its running task */
	__u64 coro_frame; /* that task's coroutine frame; 0: it has no coroutine */
	__u64 next;	  /* TASK: the task to read; 0: the chain ends after this one */
	__u64 coro;	  /* CORO: the coroutine to read; 0: the task's frames end */
	__u64 coro_type;  /* the type of the task's first coroutine */
	__u64 set_table;  /* SET: the set's entries */
	__u64 set_best;	  /* the lowest-addressed awaiter seen in it */
	__u32 set_size;	  /* its entries */
	__u32 set_pos;	  /* entries looked at */
	__u32 set_seen;	  /* awaiters found */
	__u32 ntasks;	  /* marks in the block (tasks read) */
	__u32 nblock;	  /* entries of the block */
	__u32 nframes;	  /* coroutine frames in the block */
	__u8 phase;
	__u8 outcome;	/* PW_OUT__CONTINUE until the walk ends */
	__u8 set_after; /* the task read last is awaited by a set: scan it next */
	__u8 followed;	/* `coro` is what the last coroutine awaits: maybe no coroutine */
};

/* Start the walk of the thread state at `tstate`. 1: the thread runs a task, and the walk
 * goes on (after the frame walk, which looks for a->coro_frame); 0: no task (or no loop):
 * the sample is the thread's stack alone; -1: a read failed (a->outcome says so). */
PW_INLINE int pw_async_begin(struct pw_async *a, const struct pw_async_off *o, __u64 tstate)
{
	__u64 coro = 0;

	a->running = 0;
	a->loop = 0;
	a->coro_frame = 0;
	a->next = 0;
	a->coro = 0;
	a->coro_type = 0;
	a->ntasks = 0;
	a->nblock = 0;
	a->nframes = 0;
	a->phase = PW_APH_TASK;
	a->outcome = PW_OUT__CONTINUE;
	a->set_after = 0;
	a->followed = 0;
	if (PW_READ_USER(&a->running, sizeof(a->running), tstate + o->ts_running_task))
		goto fault;
	if (!a->running)
		return 0;
	if (PW_READ_USER(&a->loop, sizeof(a->loop), tstate + o->ts_running_loop) ||
	    PW_READ_USER(&coro, sizeof(coro), a->running + o->task_coro))
		goto fault;
	if (!a->loop)
		return 0;
	a->next = a->running;
	a->coro_frame = coro ? coro + o->gen_iframe : 0;
	return 1;
fault:
	a->outcome = PW_OUT_ASYNC_FAULT;
	return -1;
}

/* The mark of task number `index` at the end of the block. */
PW_INLINE void pw_async_mark(struct pw_async *a, struct pw_asyncmem *m, __u32 index)
{
	struct pw_frame *f = &m->block[a->nblock & (PW_ASYNC_BLOCK_BUF - 1)];

	if (a->nblock >= PW_ASYNC_BLOCK)
		return;
	f->code = m->names[index & (PW_ASYNC_MAX_TASKS - 1)].task;
	f->instr = PW_INSTR_TASK;
	f->tag = index;
	a->nblock++;
}

/* After a task's mark: its awaiters set, the next task, or the end. */
PW_INLINE void pw_async_after_task(struct pw_async *a)
{
	a->phase = a->set_after ? PW_APH_SET : a->next ? PW_APH_TASK : PW_APH_DONE;
}

/* A task's name into `n`: a str (its characters, as many as fit) or an int. 0, or -1 when
 * it cannot be read. */
PW_INLINE int pw_async_name(const struct pw_proc *cfg, const struct pw_async_off *o,
			    struct pw_asyncmem *m, __u64 name, struct pw_task_name *n)
{
	const __u8 *h = (const __u8 *)m->obj;
	__u64 type, flags = 0, length, lv_tag, nd;
	__u32 state, kind, shift = cfg->obj.str_kind_shift & 15, bytes, data, have;

	n->kind = 0;
	n->negative = 0;
	n->length = 0;
	n->value = 0;
	if (!name)
		return 0;
	/* one read for the head and a short name's characters; the head alone when the
	 * object ends sooner, next to unmapped memory */
	have = PW_ASYNC_NAME_READ;
	if (PW_READ_USER(m->obj, PW_ASYNC_NAME_READ, name)) {
		have = PW_ASYNC_NAME_HEAD;
		if (PW_READ_USER(m->obj, PW_ASYNC_NAME_HEAD, name))
			return -1;
	}
	type = pw_load_u64(h, o->ob_type, PW_ASYNC_NAME_HEAD);
	if (!type)
		return -1;
	/* a str or an int as asyncio makes them; a subclass by its type's flags */
	if (type == o->str_type)
		flags = 1ull << 28;
	else if (type == o->long_type)
		flags = 1ull << 24;
	else if (PW_READ_USER(&flags, sizeof(flags), type + o->tp_flags))
		return -1;
	if (flags & (1ull << 24)) {
		/* an int (Py_TPFLAGS_LONG_SUBCLASS): lv_tag is the digit count << 3 | sign
		 * (0 positive, 1 zero, 2 negative); 30-bit digits */
		lv_tag = pw_load_u64(h, o->long_lv_tag, PW_ASYNC_NAME_HEAD);
		nd = lv_tag >> 3;
		if ((lv_tag & 3) == 3 || nd > 2)
			return 0; /* no int a task is named by: shown as unnamed */
		if ((lv_tag & 3) != 1 && nd) {
			n->value = pw_load_u32(h, o->long_digit, PW_ASYNC_NAME_HEAD) & 0x3fffffff;
			if (nd == 2)
				n->value |= (__u64)(pw_load_u32(h, o->long_digit + 4,
								PW_ASYNC_NAME_HEAD) &
						    0x3fffffff)
					    << 30;
		}
		n->negative = (lv_tag & 3) == 2;
		n->kind = PW_TASK_NAME_INT;
		return 0;
	}
	if (!(flags & (1ull << 28)))
		return 0; /* neither str nor int (Py_TPFLAGS_UNICODE_SUBCLASS) */
	length = pw_load_u64(h, cfg->obj.str_length, PW_ASYNC_NAME_HEAD);
	state = pw_load_u32(h, cfg->obj.str_state, PW_ASYNC_NAME_HEAD);
	kind = (state >> shift) & 7;
	if (!((state >> (shift + 3)) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return 0; /* not a compact str: not one asyncio makes */
	data = ((state >> (shift + 4)) & 1) ? cfg->obj.str_ascii_data : cfg->obj.str_compact_data;
	bytes = length > PW_TASK_NAME_MAX ? PW_TASK_NAME_MAX : (__u32)length * kind;
	if (bytes > PW_TASK_NAME_MAX)
		bytes = PW_TASK_NAME_MAX;
	if (data <= PW_ASYNC_NAME_READ - PW_TASK_NAME_MAX && data + bytes <= have) {
		/* the characters came with the head (bytes past the name are not used) */
		__builtin_memcpy(n->data, h + (data & 127), /* <= 96: what the test above allows */
				 PW_TASK_NAME_MAX);
	} else if (bytes &&
		   PW_READ_USER(n->data, bytes & (2 * PW_TASK_NAME_MAX - 1), name + data)) {
		return -1;
	}
	n->length = length > 0xffffffffull ? 0xffffffffu : (__u32)length;
	n->kind = (__u8)kind;
	return 0;
}

/* One task: its mark's data, who awaits it, and (an awaiting task) its coroutine next. */
PW_INLINE void pw_async_task(struct pw_async *a, const struct pw_proc *cfg,
			     const struct pw_async_off *o, struct pw_asyncmem *m)
{
	const __u8 *img = (const __u8 *)m->task;
	__u64 t = a->next, ab, coro;
	__u32 index = a->ntasks, read = o->task_read;
	struct pw_task_name *n;

	if (index >= PW_ASYNC_MAX_TASKS) {
		a->outcome = PW_OUT_ASYNC_BOUND;
		return;
	}
	PW_UNROLL
	for (int i = 0; i < PW_ASYNC_MAX_TASKS; i++) {
		if ((__u32)i < index && m->names[i].task == t) {
			a->outcome = PW_OUT_ASYNC_CYCLE;
			return;
		}
	}
	if (read > PW_ASYNC_TASK_READ)
		read = PW_ASYNC_TASK_READ;
	if (PW_READ_USER(m->task, read, t)) {
		a->outcome = PW_OUT_ASYNC_FAULT;
		return;
	}
	if (!pw_load_u8(img, o->task_is_task, PW_ASYNC_TASK_READ)) {
		/* awaited by a future that is no task: the chain has no more tasks */
		if (!index)
			a->outcome = PW_OUT_ASYNC_FAULT;
		a->phase = PW_APH_DONE;
		return;
	}
	if (pw_load_u64(img, o->task_loop, PW_ASYNC_TASK_READ) != a->loop) {
		a->outcome = PW_OUT_ASYNC_LOOP;
		return;
	}
	coro = pw_load_u64(img, o->task_coro, PW_ASYNC_TASK_READ);
	/* the running task's coroutine is where its frames were looked for */
	if (!index && (coro ? coro + o->gen_iframe : 0) != a->coro_frame) {
		a->outcome = PW_OUT_ASYNC_CHANGED;
		return;
	}
	n = &m->names[index & (PW_ASYNC_MAX_TASKS - 1)];
	n->task = t;
	n->awaiters = 0;
	if (pw_async_name(cfg, o, m, pw_load_u64(img, o->task_name, PW_ASYNC_TASK_READ) & ~3ull,
			  n)) {
		a->outcome = PW_OUT_ASYNC_FAULT;
		return;
	}
	a->ntasks = index + 1;

	ab = pw_load_u64(img, o->task_awaited_by, PW_ASYNC_TASK_READ) & ~3ull;
	a->next = 0;
	a->set_after = 0;
	if (ab && !pw_load_u8(img, o->task_awaited_by_is_set, PW_ASYNC_TASK_READ)) {
		a->next = ab;
	} else if (ab) {
		/* a set object's used count, mask and table (into the set chunk's buffer, free
		 * until the scan: the sampler's stack has no room to spare) */
		__u64 *head = m->set;

		if (PW_READ_USER(&head[0], 8, ab + o->set_used) ||
		    PW_READ_USER(&head[1], 8, ab + o->set_mask) ||
		    PW_READ_USER(&head[2], 8, ab + o->set_table)) {
			a->outcome = PW_OUT_ASYNC_FAULT;
			return;
		}
		if (head[1] >= PW_ASYNC_SET_SCAN || ((head[1] + 1) & head[1]) ||
		    head[0] > head[1] + 1 || !head[2]) {
			a->outcome = PW_OUT_ASYNC_BOUND;
			return;
		}
		a->set_table = head[2];
		a->set_size = (__u32)head[1] + 1;
		a->set_pos = 0;
		a->set_seen = 0;
		a->set_best = ~0ull;
		a->set_after = 1;
	}
	if (!index) {
		/* the running task: its frames are the thread's own */
		pw_async_mark(a, m, index);
		pw_async_after_task(a);
		return;
	}
	a->coro = coro;
	a->coro_type = 0;
	a->followed = 0;
	a->phase = PW_APH_CORO;
}

/* One coroutine frame of an awaiting task (outermost first), and what it awaits next. */
PW_INLINE void pw_async_coro(struct pw_async *a, const struct pw_proc *cfg,
			     const struct pw_async_off *o, struct pw_asyncmem *m,
			     struct pw_walkmem *wm)
{
	const __u8 *g = (const __u8 *)m->gen;
	const __u8 *f = g + (o->gen_iframe & (PW_ASYNC_GEN_READ - 1));
	__u32 read = o->gen_read, instr = PW_INSTR_NONE, tag = 0;
	__u64 c = a->coro, type, code, ip, sp, awaited = 0;
	__s8 state;
	__u8 verdict;

	if (!c)
		goto task_done;
	if (a->nframes >= PW_ASYNC_MAX_FRAMES || a->nblock >= PW_ASYNC_BLOCK - 1) {
		a->outcome = PW_OUT_ASYNC_BOUND;
		return;
	}
	if (read > PW_ASYNC_GEN_READ)
		read = PW_ASYNC_GEN_READ;
	if (PW_READ_USER(m->gen, read, c)) {
		/* what a coroutine awaits may be a smaller object, which can end next to
		 * unmapped memory: no coroutine, the frames end */
		if (a->followed)
			goto task_done;
		a->outcome = PW_OUT_ASYNC_FAULT;
		return;
	}
	type = pw_load_u64(g, o->ob_type, PW_ASYNC_GEN_READ);
	/* followed while it is a coroutine of the same type as the task's own (else a
	 * future or an iterator: the frames end) */
	if (a->followed && type != a->coro_type)
		goto task_done;
	if (!a->coro_type)
		a->coro_type = type;
	state = (__s8)pw_load_u8(g, o->gen_frame_state, PW_ASYNC_GEN_READ);
	if (state >= o->fs_finished)
		goto task_done; /* it has returned: nothing of it to show */
	if (pw_load_u8(f, cfg->off.frame_owner, PW_FRAME_READ_MAX) != o->owner_generator) {
		a->outcome = PW_OUT_ASYNC_FAULT;
		return;
	}
	code = pw_load_u64(f, cfg->off.frame_code, PW_FRAME_READ_MAX) &
	       ~(__u64)((1u << cfg->code_tag_bits) - 1);
	if (!code) {
		a->outcome = PW_OUT_ASYNC_FAULT;
		return;
	}
	ip = pw_load_u64(f, cfg->off.frame_instr, PW_FRAME_READ_MAX);
	/* the tag first: it gives the code object its memo slot (pw_tlbc_instr) */
	verdict = pw_frame_tag(wm, cfg, code, 0, &tag);
	if (verdict == PW_OUT__CONTINUE) {
		if (cfg->off.frame_tlbc_index)
			verdict = pw_tlbc_instr(wm, cfg, f, code, ip, &instr);
		else
			instr = pw_instr_offset(cfg, code, ip);
	}
	if (verdict != PW_OUT__CONTINUE) {
		a->outcome = verdict;
		return;
	}
	{
		struct pw_frame *out = &m->block[a->nblock & (PW_ASYNC_BLOCK_BUF - 1)];

		out->code = code;
		out->instr = instr;
		out->tag = tag;
	}
	a->nblock++;
	a->nframes++;
	a->coro = 0;
	if (state != o->fs_yield_from && state != o->fs_yield_from_locked)
		goto task_done;
	/* suspended in await: what it awaits sits in its value stack, read next (its type
	 * is checked with it) */
	sp = pw_load_u64(f, o->frame_stackpointer, PW_FRAME_READ_MAX);
	if (!sp || PW_READ_USER(&awaited, sizeof(awaited), sp - 8ull * o->await_slot))
		goto task_done;
	awaited &= ~3ull;
	if (awaited) {
		a->coro = awaited;
		a->followed = 1;
		return;
	}
task_done:
	pw_async_mark(a, m, a->ntasks - 1);
	pw_async_after_task(a);
}

/* One chunk of the awaiters set of the task read last. */
PW_INLINE void pw_async_set(struct pw_async *a, struct pw_asyncmem *m)
{
	__u32 n = a->set_size - a->set_pos;

	if (n > PW_ASYNC_SET_CHUNK)
		n = PW_ASYNC_SET_CHUNK;
	if (a->set_pos >= a->set_size ||
	    PW_READ_USER(m->set, (n & (2 * PW_ASYNC_SET_CHUNK - 1)) * 16,
			 a->set_table + 16ull * a->set_pos)) {
		a->outcome = PW_OUT_ASYNC_FAULT;
		return;
	}
	/* an entry is (key, hash): an empty one has no key, a removed one hash -1 */
	PW_UNROLL
	for (int j = 0; j < PW_ASYNC_SET_CHUNK; j++) {
		__u64 key = m->set[2 * j] & ~3ull;

		if ((__u32)j >= n || !key || m->set[2 * j + 1] == ~0ull)
			continue;
		a->set_seen++;
		if (key < a->set_best)
			a->set_best = key;
	}
	a->set_pos += n;
	if (a->set_pos < a->set_size)
		return;
	m->names[(a->ntasks - 1) & (PW_ASYNC_MAX_TASKS - 1)].awaiters =
		a->set_seen ? a->set_seen - 1 : 0;
	a->next = a->set_seen ? a->set_best : 0;
	a->set_after = 0;
	a->phase = a->next ? PW_APH_TASK : PW_APH_DONE;
}

/* One step. Returns 1 when the walk has ended (a->outcome: PW_OUT__CONTINUE when the chain
 * was read whole), 0 to go on. */
PW_INLINE int pw_async_step(struct pw_async *a, const struct pw_proc *cfg,
			    const struct pw_async_off *o, struct pw_asyncmem *m,
			    struct pw_walkmem *wm)
{
	if (a->phase == PW_APH_TASK)
		pw_async_task(a, cfg, o, m);
	else if (a->phase == PW_APH_CORO)
		pw_async_coro(a, cfg, o, m, wm);
	else if (a->phase == PW_APH_SET)
		pw_async_set(a, m);
	return a->outcome != PW_OUT__CONTINUE || a->phase == PW_APH_DONE;
}

/* The most steps a walk takes: a task and a set scan per task, a step per frame. */
#define PW_ASYNC_STEPS                                                                             \
	(PW_ASYNC_MAX_TASKS * (2 + PW_ASYNC_SET_SCAN / PW_ASYNC_SET_CHUNK) + PW_ASYNC_MAX_FRAMES + \
	 2)

/* The chain did not change while it was read: the thread still runs the task it began
 * with (a free-threaded build's other threads run meanwhile). PW_OUT__CONTINUE or why
 * not. */
PW_INLINE __u8 pw_async_recheck(const struct pw_async *a, const struct pw_async_off *o,
				__u64 tstate)
{
	__u64 running = 0;

	if (PW_READ_USER(&running, sizeof(running), tstate + o->ts_running_task))
		return PW_OUT_ASYNC_FAULT;
	return running == a->running ? PW_OUT__CONTINUE : PW_OUT_ASYNC_CHANGED;
}

#endif /* PW_ASYNC_H */
