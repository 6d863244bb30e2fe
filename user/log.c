// SPDX-License-Identifier: MIT
/* Log levels and the libbpf print hook. */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>

#include "log.h"

int log_level = LOG_INFO;

void log_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
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
