/* SPDX-License-Identifier: MIT */
/* Every asyncio task of a process (CPython 3.14+), read from its memory: the _asyncio
 * module's debug-offsets table (ELF section .AsyncioDebug of the mapped _asyncio module, or
 * of the executable when _asyncio is built in) says where each thread state keeps its list
 * of tasks and its running task, and where a task keeps its name, its coroutine and what
 * awaits it. Everything read is untrusted: the table's sizes are checked before use, every
 * list, set and chain walk is bounded, and what a bound cut is counted and said. */
#ifndef PW_ASYNCIO_TASKS_H
#define PW_ASYNCIO_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "pystate/pythreads.h"
#include "inspect/target.h"

/* Tasks read in full (name, coroutine chain, awaiters); the list walk goes on past them
 * counting, up to ASYNC_MAX_LISTED, so that the user is told how many there are. */
#define ASYNC_MAX_TASKS 20000
#define ASYNC_MAX_LISTED (1u << 20)
/* Awaiters kept per task (a gather's children each have one; a shared task may have many). */
#define ASYNC_MAX_AWAITERS 256
/* Coroutine frames kept per task. */
#define ASYNC_MAX_FRAMES 256

struct async_task {
	uint64_t addr;
	char name[PYTHREADS_NAME_SIZE]; /* its name, or "Task-N" for an int name */
	bool name_unreadable;
	uint64_t thread_id; /* native id (as the target sees it) of the thread whose list
			      * holds it; 0: the interpreter's list (tasks of exited threads) */
	bool running;	    /* its thread's running task */
	uint32_t nframes;   /* coroutine frames, innermost first */
	bool frames_cut;    /* more than the depth allowed (or a chain that loops) */
	bool frames_unreadable;
	struct pw_frame *frames;
	uint32_t nawaiters;
	uint32_t awaiters_cut; /* awaiters past ASYNC_MAX_AWAITERS */
	bool awaiters_unreadable;
	uint64_t *awaiters; /* addresses of the tasks (or futures) that await it */
};

/* Why there are no tasks to show (async_tasks.status). */
enum async_status {
	ASYNC_OK = 0,
	ASYNC_UNSUPPORTED,  /* the interpreter has no table to read (before 3.14) */
	ASYNC_NOT_IMPORTED, /* no _asyncio mapped: the program has no tasks */
	ASYNC_BAD_TABLE,    /* a table was found but its sizes are impossible */
	ASYNC_UNREADABLE,   /* the table or a thread's list could not be read */
};

struct async_tasks {
	enum async_status status;
	char why[512];		      /* a sentence for the user when status is not ASYNC_OK */
	char table_file[512];	      /* the file the table was taken from */
	unsigned int tables_rejected; /* tables found with impossible sizes */
	struct async_task *tasks;     /* ntasks read in full */
	size_t ntasks;
	size_t listed;	   /* tasks on the lists (counted up to ASYNC_MAX_LISTED) */
	bool list_cut;	   /* a list went on past ASYNC_MAX_LISTED, or did not end */
	size_t unreadable; /* tasks of the lists that could not be read */
};

/* Py_AsyncioModuleDebugOffsets: 13 words in 3.14 and 3.15 */
struct async_table {
	uint64_t task_size, task_name, task_awaited_by, task_is_task, task_awaited_by_is_set,
		task_coro, task_node;
	uint64_t interp_size, interp_tasks_head;
	uint64_t ts_size, ts_running_loop, ts_running_task, ts_tasks_head;
};
_Static_assert(sizeof(struct async_table) == 104, "Py_AsyncioModuleDebugOffsets is 13 words");

/* The table of process `pid` (`binary`: the file holding its interpreter, which has it when
 * _asyncio is built in; NULL: look in _asyncio modules only) as its maps show it now: ASYNC_OK with *tab set and the file it
 * came from in `why`, or why not (ASYNC_NOT_IMPORTED, ASYNC_BAD_TABLE, ASYNC_UNREADABLE),
 * said in `why`. Each table with impossible sizes adds one to *rejected (may be NULL). */
enum async_status async_table_find(pid_t pid, const char *binary, struct async_table *tab,
				   char *why, size_t why_size, unsigned int *rejected);

/* The sampler's offsets (--async) of target `t` (its version, lifetime and types) whose
 * table is `tab`. 0, or -EPROTO with the reason in `why` when the layouts do not fit what
 * the sampler reads. */
int async_sampler_offsets(const struct async_table *tab, const struct target *t,
			  struct pw_async_off *o, char *why, size_t why_size);

/* Find the table of target `t` now (it appears once the program imports asyncio). */
int async_tasks_read(const struct target *t, uint32_t max_depth, struct async_tasks *out);
void async_tasks_free(struct async_tasks *a);

#endif
