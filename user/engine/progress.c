// SPDX-License-Identifier: MIT
/* Progress line on stderr. Plain '\r' and spaces instead of terminal escapes, so it works
 * on any terminal; the line is kept shorter than the terminal so it never wraps (a wrapped
 * line cannot be rewritten with '\r'). */
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/log.h"
#include "engine/progress.h"

#define PROGRESS_PERIOD_NS 500000000ull

void progress_init(struct progress *p, uint64_t now_ns)
{
	*p = (struct progress){
		.enabled = log_level >= LOG_INFO && isatty(STDERR_FILENO),
		.start_ns = now_ns,
		.next_ns = now_ns + PROGRESS_PERIOD_NS,
	};
}

bool progress_due(const struct progress *p, uint64_t now_ns)
{
	return p->enabled && now_ns >= p->next_ns;
}

/* Columns we may use: one less than the terminal, so the cursor never wraps. */
static size_t line_room(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) || ws.ws_col < 2)
		return 79;
	return ws.ws_col - 1;
}

void progress_show(struct progress *p, uint64_t now_ns, uint64_t shipped, uint64_t rejected,
		   uint64_t lost)
{
	char line[256];
	size_t room = line_room(), len;
	int n;

	if (!p->enabled)
		return;
	p->next_ns = now_ns + PROGRESS_PERIOD_NS;
	n = snprintf(line, sizeof(line),
		     "pywalk: recording %.1f s, %llu shipped, %llu rejected, %llu lost",
		     (now_ns - p->start_ns) / 1e9, (unsigned long long)shipped,
		     (unsigned long long)rejected, (unsigned long long)lost);
	if (n < 0)
		return;
	len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	if (len > room)
		len = room;
	/* pad over the tail of a longer previous line; the cursor ends after the padding */
	if (p->shown_len > len) {
		fprintf(stderr, "\r%.*s%*s", (int)len, line, (int)(p->shown_len - len), "");
	} else {
		fprintf(stderr, "\r%.*s", (int)len, line);
		p->shown_len = len;
	}
}

void progress_clear(struct progress *p)
{
	size_t room = line_room(), len = p->shown_len;

	if (!p->enabled || !len)
		return;
	/* the terminal echoes "^C" where the cursor was: blank that too */
	len = len + 2 < room ? len + 2 : room;
	fprintf(stderr, "\r%*s\r", (int)len, "");
	p->shown_len = 0;
}
