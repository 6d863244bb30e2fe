// SPDX-License-Identifier: MIT
/* Log levels and the libbpf print hook. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>

#include "lib/log.h"

int log_level = LOG_INFO;

/* stderr is the journal's stream when JOURNAL_STREAM names its device and inode */
static bool stderr_is_journal(void)
{
	static int known = -1;
	const char *js;
	unsigned long long dev, ino;
	struct stat st;

	if (known < 0) {
		js = getenv("JOURNAL_STREAM");
		known = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && !fstat(2, &st) &&
			(unsigned long long)st.st_dev == dev &&
			(unsigned long long)st.st_ino == ino;
	}
	return known;
}

void log_printf(int level, const char *fmt, ...)
{
	/* sd-daemon priorities: err, warning, info, debug */
	static const char *const prefix[] = { "<3>", "<4>", "<6>", "<7>", "<7>" };
	va_list ap;

	if (level >= 0 && level <= LOG_LIBBPF && stderr_is_journal())
		fputs(prefix[level], stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* fmt is libbpf's printf format, passed on: the attribute says so to -Wformat-nonliteral */
__attribute__((format(printf, 2, 0))) static int libbpf_print(enum libbpf_print_level level,
							      const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && log_level < LOG_LIBBPF)
		return 0;
	if (level == LIBBPF_INFO && log_level < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_WARN && log_level < LOG_DEBUG)
		return 0; /* load failures are explained by the caller, in one line */
	return vfprintf(stderr, fmt, ap);
}

void log_hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
