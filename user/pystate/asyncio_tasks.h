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
	char table_file[256];	      /* the file the table was taken from */
	unsigned int tables_rejected; /* tables found with impossible sizes */
	struct async_task *tasks;     /* ntasks read in full */
	size_t ntasks;
	size_t listed;	   /* tasks on the lists (counted up to ASYNC_MAX_LISTED) */
	bool list_cut;	   /* a list went on past ASYNC_MAX_LISTED, or did not end */
	size_t unreadable; /* tasks of the lists that could not be read */
};

/* Find the table of target `t` now (it appears once the program imports asyncio). */
int async_tasks_read(const struct target *t, uint32_t max_depth, struct async_tasks *out);
void async_tasks_free(struct async_tasks *a);

#endif
