/* SPDX-License-Identifier: MIT */
/* Whether a thread state holds the GIL, read the way its version keeps it (enum
 * pw_gil_kind). Plain C over the includer's PW_READ_USER, like walk.h: the sampler runs it
 * when it ships a stack, dump runs it over the paused process, the unit tests over
 * synthetic memory. `ts` is the thread state image walk.h reads (tstate_read_size bytes). */
#ifndef PW_GIL_H
#define PW_GIL_H

#include "walk.h"

/* PW_SF_GIL_* bits for the thread state at `tstate`; 0 when the version cannot tell or a
 * read failed (the sample is then "GIL unknown", never "not held"). */
PW_INLINE __u16 pw_gil_flags(const struct pw_proc *cfg, const __u8 *ts, __u64 tstate)
{
	__u64 holder = 0, gil = 0, interp;
	__u32 locked = 0;

	switch (cfg->gil_kind) {
	case PW_GIL_TSTATE_CURRENT:
		/* 3.10/3.11 set it when a thread takes the GIL and clear it when it drops it */
		if (PW_READ_USER(&holder, sizeof(holder), cfg->runtime_addr + cfg->off.gil_ptr))
			return 0;
		return PW_SF_GIL_KNOWN | (holder == tstate ? PW_SF_GIL_HELD : 0);
	case PW_GIL_STRUCT:
		/* the GIL this interpreter uses (its own, or the main one's when shared);
		 * last_holder stays set after a release, so locked must be set too */
		interp = pw_load_u64(ts, cfg->off.tstate_interp, PW_TSTATE_READ_MAX);
		if (!interp || PW_READ_USER(&gil, sizeof(gil), interp + cfg->off.gil_ptr) || !gil)
			return 0;
		if (PW_READ_USER(&holder, sizeof(holder), gil + cfg->off.gil_holder) ||
		    PW_READ_USER(&locked, sizeof(locked), gil + cfg->off.gil_locked))
			return 0;
		return PW_SF_GIL_KNOWN | (locked == 1 && holder == tstate ? PW_SF_GIL_HELD : 0);
	case PW_GIL_TSTATE_FLAG:
		return PW_SF_GIL_KNOWN |
		       (pw_load_u32(ts, cfg->off.tstate_holds_gil, PW_TSTATE_READ_MAX)
				? PW_SF_GIL_HELD
				: 0);
	}
	return 0;
}

#endif /* PW_GIL_H */
