// SPDX-License-Identifier: MIT
/* fork + exec with a release pipe, and a second CLOEXEC pipe that reports exec failures. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/launch.h"

int launch_prepare(struct launch *l, char *const argv[])
{
	int go[2], report[2];

	memset(l, 0, sizeof(*l));
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(report, O_CLOEXEC)) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		return err;
	}
	l->pid = fork();
	if (l->pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(report[0]);
		close(report[1]);
		return err;
	}
	if (l->pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(report[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		/* the profiler ignores SIGPIPE; an ignored signal would stay so across exec */
		signal(SIGPIPE, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* the profiler gave up before releasing us */
		execvp(argv[0], argv);
		e = errno;
		if (write(report[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(report[1]);
	l->release_fd = go[1];
	l->exec_err_fd = report[0];
	return 0;
}

int launch_release(struct launch *l)
{
	int e = 0;
	ssize_t n;

	if (write(l->release_fd, "g", 1) != 1)
		return -errno;
	close(l->release_fd);
	l->release_fd = -1;
	/* blocks until exec succeeded (pipe closed by CLOEXEC) or failed (errno written) */
	n = read(l->exec_err_fd, &e, sizeof(e));
	close(l->exec_err_fd);
	l->exec_err_fd = -1;
	if (n == sizeof(e)) {
		waitpid(l->pid, &l->status, 0);
		l->exited = true;
		return -e;
	}
	return 0;
}

bool launch_poll_exit(struct launch *l)
{
	if (!l->exited && l->pid > 0 && waitpid(l->pid, &l->status, WNOHANG) == l->pid)
		l->exited = true;
	return l->exited;
}

void launch_kill(struct launch *l)
{
	if (l->pid <= 0 || l->exited)
		return;
	if (l->release_fd >= 0)
		close(l->release_fd); /* an unreleased child reads EOF and exits */
	kill(l->pid, SIGTERM);
	waitpid(l->pid, &l->status, 0);
	l->exited = true;
}
