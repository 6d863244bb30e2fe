// SPDX-License-Identifier: MIT
/* Helpers both sampling commands need around target discovery and the loader. They print
 * the one error line a command would print, so record and top word failures alike. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "session.h"
#include "util.h"

static const char *const outcome_labels[] = {
#define PW_X_LABEL(name, label) label,
	PW_OUTCOMES(PW_X_LABEL)
#undef PW_X_LABEL
};

/* Reject reasons are the outcomes labelled so; a new reason added to PW_OUTCOMES is
 * summed without touching this file. */
#define REJECTED_PREFIX "rejected: "

int session_add_pids(pid_t *pids, size_t *npids, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		uint32_t pid;

		err = parse_u32(tok, 1, 0x3fffffff, &pid);
		if (!err && *npids >= SESSION_MAX_PIDS)
			err = -E2BIG;
		if (!err)
			pids[(*npids)++] = (pid_t)pid;
	}
	free(copy);
	return err;
}

int session_open_pids(const pid_t *pids, size_t n, struct target *targets)
{
	char why[512];

	for (size_t i = 0; i < n; i++) {
		int err, tries = 0;

		do {
			err = target_open(pids[i], &targets[i], why, sizeof(why));
			if (err == -EAGAIN)
				usleep(20000);
		} while (err == -EAGAIN && ++tries < 100);
		if (err) {
			pw_err("%s\n", why);
			return err;
		}
		pw_debug("PID %d: Python %u.%u.%u, _PyRuntime at 0x%llx in %s\n", pids[i],
			 targets[i].ver.major, targets[i].ver.minor, targets[i].ver.micro,
			 (unsigned long long)targets[i].ver.cfg.runtime_addr, targets[i].binary);
	}
	return 0;
}

int session_track(struct profile *prof, struct loader *ld, const struct target *targets,
		  size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = profile__add_target(prof, &targets[i]);

		if (!err)
			err = loader__add_process(ld, targets[i].pid, &targets[i].ver.cfg);
		if (err) {
			pw_err("cannot add PID %d: %s\n", targets[i].pid, strerror(-err));
			return err;
		}
	}
	return 0;
}

bool session_any_alive(const struct target *targets, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (proc_is_alive(targets[i].pid))
			return true;
	return false;
}

uint64_t session_rejected(const uint64_t counts[PW_OUT__COUNT], int *worst)
{
	uint64_t sum = 0, max = 0;

	if (worst)
		*worst = PW_OUT_TORN;
	for (int i = 0; i < PW_OUT__COUNT; i++) {
		if (strncmp(outcome_labels[i], REJECTED_PREFIX, strlen(REJECTED_PREFIX)))
			continue;
		sum += counts[i];
		if (counts[i] > max) {
			max = counts[i];
			if (worst)
				*worst = i;
		}
	}
	return sum;
}

const char *session_outcome_label(int outcome, bool short_label)
{
	const char *label;

	if (outcome < 0 || outcome >= PW_OUT__COUNT)
		return "?";
	label = outcome_labels[outcome];
	if (short_label && !strncmp(label, REJECTED_PREFIX, strlen(REJECTED_PREFIX)))
		label += strlen(REJECTED_PREFIX);
	return label;
}
