/* SPDX-License-Identifier: MIT */
/* trace --aggregate, userspace side: the first record of each kernel-side key (its frames,
 * symbolized by the profile as any sample is, and counted with its own weight) is kept by
 * generation; when a generation is drained, each key's count is added to the profile under
 * the stack its first record had, or to the reason that record was not counted. */
#ifndef PW_KAGG_H
#define PW_KAGG_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "profile/profile.h"

struct kagg;

struct kagg_stats {
	uint64_t keys;	       /* first records (keys defined) */
	uint64_t drained;      /* keys whose counts were drained */
	uint64_t drains;       /* generations drained */
	uint64_t unattributed; /* hits of a key without a first record (counted malformed) */
};

struct kagg *kagg__new(void);
void kagg__free(struct kagg *k);

/* A PW_REC_AGG_FIRST record: `count` (the caller's sample counter) is run over the sample
 * that follows its header, and the key is remembered with the stack the profile made of
 * it. 0 or a negative errno. */
int kagg__first(struct kagg *k, struct profile *p, const void *data, size_t size,
		int (*count)(void *ctx, const void *data, size_t size), void *ctx);
/* The profile's per-stack hook (profile_opts.on_stack) while kagg__first counts. */
void kagg__on_stack(void *ctx, const struct profile *p, const struct pw_sample_hdr *h, size_t size,
		    uint32_t proc, const uint32_t *ids, uint32_t n);
/* One drained count of generation `gen` into p. 0 or -ENOMEM. */
int kagg__credit(struct kagg *k, struct profile *p, uint32_t gen, const struct pw_agg_key *key,
		 const struct pw_agg_val *val);
/* Generation `gen` is drained: forget its keys. */
void kagg__end_gen(struct kagg *k, uint32_t gen);
const struct kagg_stats *kagg__stats(const struct kagg *k);

#endif
