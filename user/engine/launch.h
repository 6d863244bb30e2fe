/* SPDX-License-Identifier: MIT */
/* Start a command held at the door: forked, but it execs only when released, so sampling
 * is set up before the program runs. */
#ifndef PW_LAUNCH_H
#define PW_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

struct launch {
	pid_t pid;
	int release_fd;	 /* write end of the pipe the child waits on */
	int exec_err_fd; /* read end: receives errno if exec fails (CLOEXEC closes it on success) */
	bool exited;
	int status;
};

/* Fork a child that will exec argv[0] (PATH searched). 0 or a negative errno. */
int launch_prepare(struct launch *l, char *const argv[]);
/* Let the child exec. 0, or the negative errno of a failed exec. */
int launch_release(struct launch *l);
/* Non-blocking: has the child exited? */
bool launch_poll_exit(struct launch *l);
/* Terminate (SIGTERM) and reap the child. */
void launch_kill(struct launch *l);

#endif
