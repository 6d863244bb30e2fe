// SPDX-License-Identifier: MIT
/* asyncio tasks from target memory (asyncio_tasks.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pystate/asyncio_tasks.h"
#include "inspect/elfinfo.h"
#include "inspect/proc.h"
#include "symbolize/symtab.h"

/* The walker reads the target through this; one read of tasks at a time. */
static pid_t reading_pid;
static unsigned long reads_left;

static int read_target(void *dst, uint32_t size, uint64_t addr)
{
	if (!reads_left)
		return -E2BIG;
	reads_left--;
	return proc_read_mem(reading_pid, addr, dst, size);
}

#define PW_READ_USER(dst, size, addr) read_target((dst), (size), (addr))
#include "walk.h"

/* Reads one look at the tasks may take in all: 100,000 tasks are listed and the first
 * ASYNC_MAX_TASKS read in full well inside it; a hostile graph cannot make it run long. */
#define ASYNC_MAX_READS 4000000ul
/* Largest awaiter set table walked (entries); a gather of more is cut and counted. */
#define ASYNC_MAX_SET_TABLE (1u << 16)
#define SET_CHUNK 64
/* Largest object sizes a table may claim (bytes): a TaskObj is ~200, a thread state ~1 KiB. */
#define ASYNC_MAX_TASK_SIZE 4096
#define ASYNC_MAX_STATE_SIZE (1u << 20)
#define TPF_LONG (1ull << 24)
#define TPF_UNICODE (1ull << 28)
#define OWNER_GENERATOR 1

struct reader {
	const struct target *t;
	struct pw_proc cfg;
	const struct py_asynclayout *lay;
	struct async_table tab;
	uint8_t *task_img; /* tab.task_size bytes */
	uint32_t max_frames;
	struct pw_walkmem *mem;
	/* one task's frames and awaiters while it is read; copied out at their size */
	struct pw_frame *frames;
	uint64_t *awaiters;
};

static uint64_t load64(const uint8_t *img, uint64_t off)
{
	uint64_t v;

	memcpy(&v, img + off, 8);
	return v;
}

static int rd64(uint64_t addr, uint64_t *v)
{
	*v = 0;
	return read_target(v, sizeof(*v), addr);
}

/* A table whose sizes no interpreter has: each field must lie inside its object. */
static const char *table_problem(const struct async_table *a)
{
	if (a->task_size < 64 || a->task_size > ASYNC_MAX_TASK_SIZE)
		return "task object size";
	if (a->task_name > a->task_size - 8 || a->task_awaited_by > a->task_size - 8 ||
	    a->task_coro > a->task_size - 8 || a->task_node > a->task_size - 16 ||
	    a->task_is_task > a->task_size - 1 || a->task_awaited_by_is_set > a->task_size - 1 ||
	    ((a->task_name | a->task_awaited_by | a->task_coro | a->task_node) & 7))
		return "task object field offsets";
	if (a->interp_size < 16 || a->interp_size > ASYNC_MAX_STATE_SIZE ||
	    a->interp_tasks_head > a->interp_size - 16 || (a->interp_tasks_head & 7))
		return "interpreter state offsets";
	if (a->ts_size < 16 || a->ts_size > ASYNC_MAX_STATE_SIZE ||
	    a->ts_running_loop > a->ts_size - 8 || a->ts_running_task > a->ts_size - 8 ||
	    a->ts_tasks_head > a->ts_size - 16 ||
	    ((a->ts_running_loop | a->ts_running_task | a->ts_tasks_head) & 7))
		return "thread state offsets";
	return NULL;
}

static bool is_asyncio_module(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "_asyncio.", 9) && strstr(base, ".so");
}

enum async_status async_table_find(pid_t pid, const char *binary, struct async_table *found,
				   char *why, size_t why_size, unsigned int *rejected_count)
{
	struct proc_maps maps = { 0 };
	struct async_table tab;
	const char *rejected = NULL;
	enum async_status status = ASYNC_NOT_IMPORTED;
	int err = proc_read_maps(pid, &maps);

	if (why_size)
		why[0] = 0;
	if (err) {
		snprintf(why, why_size, "cannot read its memory map: %s", strerror(-err));
		return ASYNC_UNREADABLE;
	}
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_map *m = &maps.maps[i];
		struct elf_section sec;
		uint64_t bias;
		int fd;

		if (!m->path || m->offset || !m->inode ||
		    (!is_asyncio_module(m->path) && (!binary || strcmp(m->path, binary))))
			continue;
		fd = proc_open_mapped_file(pid, m);
		if (fd < 0)
			continue;
		err = elf_find_section(fd, ".AsyncioDebug", &sec);
		close(fd);
		if (err || sec.size < sizeof(tab))
			continue;
		bias = sec.is_dyn ? m->start - sec.first_load_vaddr : 0;
		if (proc_read_mem(pid, bias + sec.vaddr, &tab, sizeof(tab))) {
			if (status != ASYNC_OK) {
				status = ASYNC_UNREADABLE;
				snprintf(why, why_size, "cannot read the asyncio table of %s",
					 m->path);
			}
			continue;
		}
		/* every table is looked at, so that each forged one is counted */
		rejected = table_problem(&tab);
		if (rejected) {
			if (rejected_count)
				(*rejected_count)++;
			if (status != ASYNC_OK) {
				status = ASYNC_BAD_TABLE;
				snprintf(why, why_size,
					 "the asyncio table in %s is rejected: impossible %s",
					 m->path, rejected);
			}
			continue;
		}
		if (status == ASYNC_OK)
			continue;
		*found = tab;
		/* the file it came from, for the user */
		snprintf(why, why_size, "%s", m->path);
		status = ASYNC_OK;
	}
	proc_maps_free(&maps);
	return status;
}

/* The type flags of the object at `obj`. */
static int type_flags(const struct reader *r, uint64_t obj, uint64_t *flags)
{
	uint64_t type;
	int err = rd64(obj + r->lay->ob_type, &type);

	if (!err)
		err = rd64(type + r->lay->tp_flags, flags);
	return err;
}

/* A task's name: a str, or an int (the counter asyncio names unnamed tasks by). */
static int read_name(const struct reader *r, uint64_t obj, char *out, size_t size)
{
	const struct py_objlayout *o = &r->t->ver.obj;
	uint8_t data[PYTHREADS_NAME_CHARS * 4];
	uint64_t flags, length, tag;
	uint32_t state, digit[2] = { 0, 0 };
	unsigned int kind;
	char *s;
	int err = type_flags(r, obj, &flags);

	if (err)
		return err;
	if (flags & TPF_LONG) {
		uint64_t ndigits, v;

		err = rd64(obj + r->lay->long_lv_tag, &tag);
		if (err)
			return err;
		/* lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2 negative) */
		ndigits = tag >> 3;
		if ((tag & 3) == 1 || !ndigits) {
			snprintf(out, size, "Task-0");
			return 0;
		}
		if (ndigits > 2 || (tag & 3) == 3)
			return -EPROTO;
		err = read_target(digit, (uint32_t)(ndigits * 4), obj + r->lay->long_digit);
		if (err)
			return err;
		v = (uint64_t)(digit[0] & 0x3fffffff) | (uint64_t)(digit[1] & 0x3fffffff) << 30;
		snprintf(out, size, "Task-%s%llu", (tag & 3) == 2 ? "-" : "",
			 (unsigned long long)v);
		return 0;
	}
	if (!(flags & TPF_UNICODE))
		return -EPROTO;
	err = rd64(obj + o->str_length, &length);
	if (!err)
		err = read_target(&state, sizeof(state), obj + o->str_state);
	if (err)
		return err;
	/* kind, compact, ascii: from bit 2 of the state, or bit 8 where `interned` is a byte */
	kind = (state >> o->str_kind_shift) & 7;
	if (!((state >> (o->str_kind_shift + 3)) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -EPROTO;
	{
		uint64_t n = length < PYTHREADS_NAME_CHARS ? length : PYTHREADS_NAME_CHARS;
		uint64_t at =
			obj + (((state >> (o->str_kind_shift + 4)) & 1) ? o->str_ascii_data
									: o->str_compact_data);

		if (n && (err = read_target(data, (uint32_t)(n * kind), at)))
			return err;
		s = symtab_decode_str(data, n, kind, length > n);
	}
	if (!s)
		return -ENOMEM;
	snprintf(out, size, "%s", s);
	free(s);
	return 0;
}

/* The sampler's frame record of the interpreter frame image `f`. */
static int frame_record(struct reader *r, const uint8_t *f, struct pw_frame *out)
{
	const struct pw_offsets *o = &r->cfg.off;
	uint64_t code = load64(f, o->frame_code) & ~(uint64_t)((1u << r->cfg.code_tag_bits) - 1);
	uint64_t ip = load64(f, o->frame_instr), start = code + o->code_adaptive;

	if (!code)
		return -EPROTO;
	out->code = code;
	/* the tag first: it gives the code object its memo slot, which pw_tlbc_instr uses */
	if (pw_frame_tag(r->mem, &r->cfg, code, 0, &out->tag) != PW_OUT__CONTINUE)
		return -EFAULT;
	if (o->frame_tlbc_index) {
		/* free-threaded: the pointer may be in the thread's own bytecode copy, proven
		 * as the sampler proves it; in no copy it is no line */
		uint32_t instr;

		out->instr = pw_tlbc_instr(r->mem, &r->cfg, f, code, ip, &instr) == PW_OUT__CONTINUE
				     ? instr
				     : PW_INSTR_NONE;
	} else {
		out->instr = ip >= start && ip - start < 0x1fffffffeull
				     ? (uint32_t)((ip - start) >> 1)
				     : PW_INSTR_NONE;
	}
	return 0;
}

/* A suspended task's coroutine chain: its coroutine's frame, then, while it waits in
 * await on another coroutine of the same type, that one's, innermost last in `out`. */
static void coro_chain(struct reader *r, uint64_t coro, struct async_task *k)
{
	const struct py_asynclayout *a = r->lay;
	uint32_t fsize = r->cfg.off.frame_read_size;
	uint8_t img[512] __attribute__((aligned(8)));
	uint64_t span;

	if (fsize < a->frame_stackpointer + 8u)
		fsize = a->frame_stackpointer + 8u;
	span = a->gen_iframe + (uint64_t)fsize;
	if (span < a->gen_frame_state + 1u)
		span = a->gen_frame_state + 1u;
	if (span > sizeof(img) || span < a->ob_type + 8u) {
		k->frames_unreadable = true;
		return;
	}
	while (coro) {
		const uint8_t *f = img + a->gen_iframe;
		uint64_t type, sp, awaited, awaited_type;
		int8_t state;

		if (k->nframes == r->max_frames) {
			k->frames_cut = true;
			return;
		}
		if (read_target(img, (uint32_t)span, coro)) {
			k->frames_unreadable = true;
			return;
		}
		state = (int8_t)img[a->gen_frame_state];
		if (state >= a->fs_finished)
			return;
		if (r->cfg.off.frame_owner != PW_OFF_NONE &&
		    f[r->cfg.off.frame_owner] != OWNER_GENERATOR) {
			k->frames_unreadable = true;
			return;
		}
		if (frame_record(r, f, &k->frames[k->nframes])) {
			k->frames_unreadable = true;
			return;
		}
		k->nframes++;
		if (state != a->fs_yield_from && state != a->fs_yield_from_locked)
			return;
		/* what it awaits is the top of its value stack; followed only while it is a
		 * coroutine of the same type (else a future or an iterator: the chain ends) */
		type = load64(img, a->ob_type);
		sp = load64(f, a->frame_stackpointer);
		if (!sp || rd64(sp - 8u * a->await_slot, &awaited))
			return;
		awaited &= ~(uint64_t)3;
		if (!awaited || rd64(awaited + a->ob_type, &awaited_type) || awaited_type != type)
			return;
		coro = awaited;
	}
}

/* The running task's frames: the thread's own, from its innermost frame down to the task's
 * coroutine frame (which is executing, linked to what it called). False when the walk
 * does not reach it. */
static bool running_chain(struct reader *r, uint64_t tstate, uint64_t coro, struct async_task *k)
{
	uint8_t ts[PW_TSTATE_READ_MAX] __attribute__((aligned(8))) = { 0 };
	uint32_t size = r->cfg.off.tstate_read_size;
	uint64_t target = coro + r->lay->gen_iframe;
	__u64 current;
	struct pw_walk w;

	if (size > sizeof(ts))
		size = sizeof(ts);
	if (read_target(ts, size, tstate) ||
	    pw_current_frame(&r->cfg, ts, &current) != PW_OUT__CONTINUE)
		return false;
	pw_walk_start(&w, r->mem, &r->cfg, ts, current, r->max_frames);
	for (uint32_t i = 0; i < pw_walk_bound(r->max_frames); i++) {
		uint64_t here = w.frame;
		int done = pw_walk_step(&w, &r->cfg, r->mem);

		if (w.emit && w.nframes <= r->max_frames)
			k->frames[w.nframes - 1] = w.cur;
		if (w.emit && here == target) {
			k->nframes = w.nframes;
			return true;
		}
		if (done)
			break;
	}
	k->nframes = 0;
	return false;
}

/* The tasks that await task `k`: one task, or a set of them. */
static void read_awaiters(struct reader *r, const uint8_t *task, struct async_task *k)
{
	const struct py_asynclayout *a = r->lay;
	uint64_t ab = load64(task, r->tab.task_awaited_by) & ~(uint64_t)3;
	uint64_t used, mask, table, entries[SET_CHUNK * 2];

	if (!ab)
		return;
	if (!task[r->tab.task_awaited_by_is_set]) {
		k->awaiters[k->nawaiters++] = ab;
		return;
	}
	if (rd64(ab + a->set_used, &used) || rd64(ab + a->set_mask, &mask) ||
	    rd64(ab + a->set_table, &table) || mask >= ASYNC_MAX_SET_TABLE || ((mask + 1) & mask) ||
	    used > mask + 1) {
		k->awaiters_unreadable = true;
		return;
	}
	for (uint64_t i = 0, found = 0; i <= mask && found < used; i += SET_CHUNK) {
		uint64_t n = mask + 1 - i < SET_CHUNK ? mask + 1 - i : SET_CHUNK;

		if (read_target(entries, (uint32_t)(n * 16), table + i * 16)) {
			k->awaiters_unreadable = true;
			return;
		}
		/* an entry is (key, hash): empty has no key, a removed one hash -1 */
		for (uint64_t j = 0; j < n; j++) {
			if (!entries[2 * j] || entries[2 * j + 1] == ~0ull)
				continue;
			found++;
			if (k->nawaiters < ASYNC_MAX_AWAITERS)
				k->awaiters[k->nawaiters++] = entries[2 * j] & ~(uint64_t)3;
			else
				k->awaiters_cut++;
		}
	}
}

static int keep(struct async_task *k);
static void read_chain(struct reader *r, uint64_t tstate, uint64_t coro, struct async_task *k);

static int read_task(struct reader *r, uint64_t addr, uint64_t thread_id, uint64_t tstate,
		     uint64_t running, struct async_task *k)
{
	const uint8_t *img = r->task_img;
	uint64_t name, coro;

	memset(k, 0, sizeof(*k));
	k->addr = addr;
	k->thread_id = thread_id;
	if (read_target(r->task_img, (uint32_t)r->tab.task_size, addr) || !img[r->tab.task_is_task])
		return -EFAULT;
	k->frames = r->frames;
	k->awaiters = r->awaiters;
	name = load64(img, r->tab.task_name) & ~(uint64_t)3;
	if (!name || read_name(r, name, k->name, sizeof(k->name)))
		k->name_unreadable = true;
	read_awaiters(r, img, k);
	coro = load64(img, r->tab.task_coro) & ~(uint64_t)3;
	k->running = running == addr && tstate;
	if (coro)
		read_chain(r, tstate, coro, k);
	return keep(k);
}

/* The task's frames and awaiters moved out of the reader's scratch, at their size. */
static int keep(struct async_task *k)
{
	const struct pw_frame *f = k->frames;
	const uint64_t *aw = k->awaiters;

	k->frames = NULL;
	k->awaiters = NULL;
	if (k->nframes && !(k->frames = malloc(k->nframes * sizeof(*f))))
		return -ENOMEM;
	if (k->nawaiters && !(k->awaiters = malloc(k->nawaiters * sizeof(*aw)))) {
		free(k->frames);
		k->frames = NULL;
		return -ENOMEM;
	}
	if (k->nframes)
		memcpy(k->frames, f, k->nframes * sizeof(*f));
	if (k->nawaiters)
		memcpy(k->awaiters, aw, k->nawaiters * sizeof(*aw));
	return 0;
}

static void read_chain(struct reader *r, uint64_t tstate, uint64_t coro, struct async_task *k)
{
	if (!(k->running && running_chain(r, tstate, coro, k))) {
		k->nframes = 0;
		coro_chain(r, coro, k);
		/* outermost coroutine first: turn it innermost first, as stacks are shown */
		for (uint32_t i = 0; i < k->nframes / 2; i++) {
			struct pw_frame f = k->frames[i];

			k->frames[i] = k->frames[k->nframes - 1 - i];
			k->frames[k->nframes - 1 - i] = f;
		}
	}
}

/* Every task of the list whose head is at `head`. */
static int read_list(struct reader *r, uint64_t head, uint64_t thread_id, uint64_t tstate,
		     struct async_tasks *out)
{
	uint64_t node, running = 0;
	int err;

	if (tstate && rd64(tstate + r->tab.ts_running_task, &running))
		running = 0;
	if (rd64(head + r->lay->llist_next, &node))
		return -EFAULT;
	/* a thread state whose list was never set up holds no task */
	for (; node && node != head; out->listed++) {
		uint64_t task = node - r->tab.task_node;

		if (out->listed >= ASYNC_MAX_LISTED) {
			out->list_cut = true;
			return 0;
		}
		if (out->ntasks < ASYNC_MAX_TASKS) {
			err = read_task(r, task, thread_id, tstate, running,
					&out->tasks[out->ntasks]);
			if (err == -ENOMEM)
				return err;
			if (err) {
				out->unreadable++;
			} else {
				out->ntasks++;
			}
		}
		if (rd64(node + r->lay->llist_next, &node)) {
			out->list_cut = true;
			return 0;
		}
	}
	if (!node)
		out->list_cut = true;
	return 0;
}

int async_tasks_read(const struct target *t, uint32_t max_depth, struct async_tasks *out)
{
	struct reader r = { .t = t, .cfg = target_config(t), .lay = &t->ver.aio };
	struct pw_tfind tf;
	uint64_t interps[PW_MAX_INTERPRETERS];
	size_t ninterps = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (t->ver.minor < 14 || !t->ver.aio.present) {
		out->status = ASYNC_UNSUPPORTED;
		snprintf(out->why, sizeof(out->why),
			 "Python %u.%u has no asyncio debug table to read tasks from (3.14+)",
			 t->ver.major, t->ver.minor);
		return 0;
	}
	reading_pid = t->pid;
	reads_left = ASYNC_MAX_READS;
	out->status = async_table_find(t->pid, t->binary, &r.tab, out->why, sizeof(out->why),
				       &out->tables_rejected);
	if (out->status != ASYNC_OK)
		return 0;
	snprintf(out->table_file, sizeof(out->table_file), "%s", out->why);
	out->why[0] = 0;
	r.max_frames = max_depth && max_depth < ASYNC_MAX_FRAMES ? max_depth : ASYNC_MAX_FRAMES;
	r.task_img = calloc(1, r.tab.task_size);
	r.mem = calloc(1, sizeof(*r.mem));
	r.frames = calloc(r.max_frames, sizeof(*r.frames));
	r.awaiters = calloc(ASYNC_MAX_AWAITERS, sizeof(*r.awaiters));
	out->tasks = calloc(ASYNC_MAX_TASKS, sizeof(*out->tasks));
	if (!r.task_img || !r.mem || !r.frames || !r.awaiters || !out->tasks) {
		err = -ENOMEM;
		goto done;
	}
	err = pw_tfind_init(&tf, &r.cfg, ~0ull);
	for (unsigned int guard = 0; !err && guard < 2 * 4096 + PW_MAX_INTERPRETERS; guard++) {
		uint64_t here = tf.tstate, id = 0;

		if (here) {
			bool seen = false;

			for (size_t i = 0; i < ninterps; i++)
				seen |= interps[i] == tf.interp;
			if (!seen && ninterps < PW_MAX_INTERPRETERS)
				interps[ninterps++] = tf.interp;
			read_target(&id, 4, here + r.cfg.off.tstate_thread_id);
			err = read_list(&r, here + r.tab.ts_tasks_head, id, here, out);
		}
		if (!err && pw_tfind_step(&tf, &r.cfg))
			break;
	}
	if (!err && tf.err)
		err = tf.err;
	for (size_t i = 0; !err && i < ninterps; i++)
		err = read_list(&r, interps[i] + r.tab.interp_tasks_head, 0, 0, out);
	if (err == -E2BIG || (!err && !reads_left)) {
		out->list_cut = true;
		err = 0;
	}
done:
	if (err && err != -ENOMEM) {
		out->status = ASYNC_UNREADABLE;
		snprintf(out->why, sizeof(out->why), "cannot read its task lists: %s",
			 strerror(-err));
		err = 0;
	}
	free(r.task_img);
	free(r.mem);
	free(r.frames);
	free(r.awaiters);
	return err;
}

void async_tasks_free(struct async_tasks *a)
{
	for (size_t i = 0; i < a->ntasks; i++) {
		free(a->tasks[i].frames);
		free(a->tasks[i].awaiters);
	}
	free(a->tasks);
	memset(a, 0, sizeof(*a));
}

/* An offset the sampler reads at: it must lie, with `size` bytes, below `limit`. */
static bool fits(uint64_t off, unsigned int size, unsigned int limit)
{
	return off <= limit && size <= limit - off;
}

int async_sampler_offsets(const struct async_table *tab, const struct target *t,
			  struct pw_async_off *o, char *why, size_t why_size)
{
	const struct py_version *ver = &t->ver;
	const struct py_asynclayout *a = &ver->aio;
	const struct py_objlayout *ob = &ver->obj;
	const struct pw_offsets *fo = &ver->cfg.off;
	/* where the task's fields end: the pointers, then the two flags (chars) */
	uint64_t ends[] = { tab->task_name + 8, tab->task_awaited_by + 8, tab->task_coro + 8,
			    tab->task_is_task + 1, tab->task_awaited_by_is_set + 1 };
	uint64_t task_read = 0, frame_span, gen_read;
	const char *bad = table_problem(tab);

	memset(o, 0, sizeof(*o));
	if (!bad && !a->present)
		bad = "interpreter layout (no generator offsets)";
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		if (ends[i] > task_read)
			task_read = ends[i];
	frame_span = fo->frame_read_size > a->frame_stackpointer + 8u ? fo->frame_read_size
								      : a->frame_stackpointer + 8u;
	gen_read = a->gen_iframe + frame_span;
	if (gen_read < a->gen_frame_state + 1u)
		gen_read = a->gen_frame_state + 1u;
	if (!bad && (task_read > PW_ASYNC_TASK_READ || ob->ob_type + 16u > tab->task_name))
		bad = "task object (its fields lie past what a sample reads)";
	if (!bad && (gen_read > PW_ASYNC_GEN_READ || a->gen_iframe >= PW_ASYNC_GEN_READ ||
		     frame_span > PW_FRAME_READ_MAX))
		bad = "coroutine object (its frame lies past what a sample reads)";
	/* a task name's object head (64 bytes) holds its type, length, state and digits */
	if (!bad && !(fits(ob->ob_type, 8, 64) && fits(ob->str_length, 8, 64) &&
		      fits(ob->str_state, 4, 64) && fits(a->long_lv_tag, 8, 64) &&
		      fits(a->long_digit, 8, 64)))
		bad = "str or int object";
	if (!bad && (tab->ts_running_loop > 0xfff8 || tab->ts_running_task > 0xfff8 ||
		     a->tp_flags > 0xfff8 || a->set_used > 0xfff8 || a->set_mask > 0xfff8 ||
		     a->set_table > 0xfff8))
		bad = "thread state or set object";
	if (bad) {
		snprintf(why, why_size, "the asyncio table does not fit the sampler: %s", bad);
		return -EPROTO;
	}
	o->target = t->id;
	o->str_type = t->str_type;
	o->long_type = t->long_type;
	o->ts_running_loop = (uint16_t)tab->ts_running_loop;
	o->ts_running_task = (uint16_t)tab->ts_running_task;
	o->task_read = (uint16_t)task_read;
	o->task_loop = (uint16_t)(ob->ob_type + 8);
	o->task_name = (uint16_t)tab->task_name;
	o->task_awaited_by = (uint16_t)tab->task_awaited_by;
	o->task_is_task = (uint16_t)tab->task_is_task;
	o->task_awaited_by_is_set = (uint16_t)tab->task_awaited_by_is_set;
	o->task_coro = (uint16_t)tab->task_coro;
	o->ob_type = ob->ob_type;
	o->tp_flags = a->tp_flags;
	o->long_lv_tag = a->long_lv_tag;
	o->long_digit = a->long_digit;
	o->gen_iframe = a->gen_iframe;
	o->gen_frame_state = a->gen_frame_state;
	o->gen_read = (uint16_t)gen_read;
	o->frame_stackpointer = a->frame_stackpointer;
	o->set_used = a->set_used;
	o->set_mask = a->set_mask;
	o->set_table = a->set_table;
	o->fs_yield_from = a->fs_yield_from;
	o->fs_yield_from_locked = a->fs_yield_from_locked;
	o->fs_finished = a->fs_finished;
	o->await_slot = a->await_slot;
	o->owner_generator = OWNER_GENERATOR;
	return 0;
}
