/* SPDX-License-Identifier: MIT */
/* A writer of the Prometheus text exposition format (version 0.0.4): metric families with
 * HELP and TYPE once each, samples with label values escaped (backslash, double quote,
 * newline), so a hostile name in a label value cannot forge another line. */
#ifndef PW_METRICS_H
#define PW_METRICS_H

#include <stdint.h>

#include "lib/escape.h"

/* Start a family: `type` is "counter" or "gauge". */
int metrics_family(struct strbuf *sb, const char *name, const char *type, const char *help);
/* One sample of the current family: `labels` is NULL or pairs key, value, ..., NULL. */
int metrics_sample(struct strbuf *sb, const char *name, const char *const *labels, double value);
/* A family with one unlabelled sample. */
int metrics_one(struct strbuf *sb, const char *name, const char *type, const char *help,
		double value);

#endif
