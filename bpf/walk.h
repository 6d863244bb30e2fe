/* SPDX-License-Identifier: MIT */
/* The CPython frame walker and thread-state finder, written once as plain C over a
 * read-user-memory hook so the BPF program and the userspace unit tests (synthetic
 * memory images) run the same code. Each function does one bounded step; the caller
 * supplies the loop (bpf_loop in BPF, a plain for loop in tests).
 *
 * The includer defines PW_READ_USER(dst, size, addr) returning 0 or a negative error,
 * and PW_INLINE. Nothing here allocates, symbolizes or reads strings. */
#ifndef PW_WALK_H
#define PW_WALK_H

#include "abi.h"
#include "tag.h"

#ifndef PW_INLINE
#define PW_INLINE static inline __attribute__((always_inline))
#endif

/* Scratch buffers are zeroed in userspace builds. BPF skips it (it is per-frame cost): the
 * privileged verifier allows reading stack bytes not yet written, every field used lies
 * inside what was read, and words outside a tag window are masked out. */
#ifdef __bpf__
#define PW_ZERO(buf) \
	do {         \
	} while (0)
#else
#define PW_ZERO(buf) __builtin_memset((buf), 0, sizeof(buf))
#endif

/* Little-endian loads at a byte offset inside a buffer of `cap` bytes; an offset that
 * does not fit reads as 0 (the configured offsets are checked in userspace as well). */
/* The images are 8-aligned and CPython's fields are naturally aligned (pyver.c refuses
 * other offsets), so a load is one instruction, not eight byte loads and shifts. */
PW_INLINE __u64 pw_load_u64(const __u8 *buf, __u32 off, __u32 cap)
{
	__u64 v;

	if (off > cap - 8)
		return 0;
	__builtin_memcpy(&v, __builtin_assume_aligned(buf + (off & ~7u), 8), 8);
	return v;
}

PW_INLINE __u32 pw_load_u32(const __u8 *buf, __u32 off, __u32 cap)
{
	__u32 v;

	if (off > cap - 4)
		return 0;
	__builtin_memcpy(&v, __builtin_assume_aligned(buf + (off & ~3u), 4), 4);
	return v;
}

PW_INLINE __u8 pw_load_u8(const __u8 *buf, __u32 off, __u32 cap)
{
	if (off > cap - 1)
		return 0;
	return buf[off];
}

/* ---- thread state lookup -------------------------------------------------------------- */

struct pw_tfind {
	__u64 want_id; /* gettid() or fsbase, per thread_match */
	__u64 interp;  /* interpreter whose list is being walked */
	__u64 tstate;  /* next thread state to look at, 0 = move to the next interpreter */
	__u64 found;   /* the match, 0 while not found */
	__u32 n_interps;
	int err; /* negative when a read failed */
};

/* Start a lookup: reads _PyRuntime.interpreters.head. Returns 0 or a negative error. */
PW_INLINE int pw_tfind_init(struct pw_tfind *st, const struct pw_proc *cfg, __u64 want_id)
{
	__u64 interp = 0;
	int err;

	st->want_id = want_id;
	st->interp = 0;
	st->found = 0;
	st->tstate = 0;
	st->n_interps = 0;
	st->err = 0;
	err = PW_READ_USER(&interp, sizeof(interp),
			   cfg->runtime_addr + cfg->off.runtime_interp_head);
	if (err)
		return err;
	st->interp = interp;
	if (interp) {
		err = PW_READ_USER(&st->tstate, sizeof(st->tstate),
				   interp + cfg->off.interp_threads_head);
		if (err)
			return err;
	}
	return 0;
}

/* One thread state (or one hop to the next interpreter). Returns 1 when done (found, end of
 * lists, or error in st->err), 0 to go on. */
PW_INLINE int pw_tfind_step(struct pw_tfind *st, const struct pw_proc *cfg)
{
	__u64 id = 0, next = 0;
	int err;

	if (!st->interp)
		return 1;
	if (!st->tstate) {
		if (++st->n_interps >= PW_MAX_INTERPRETERS)
			return 1;
		err = PW_READ_USER(&next, sizeof(next), st->interp + cfg->off.interp_next);
		if (err)
			goto fault;
		st->interp = next;
		if (!next)
			return 1;
		err = PW_READ_USER(&st->tstate, sizeof(st->tstate),
				   next + cfg->off.interp_threads_head);
		if (err)
			goto fault;
		return 0;
	}
	if (cfg->thread_match == PW_MATCH_NATIVE_TID) {
		__u32 tid = 0; /* unsigned long in CPython, a pid_t fits 32 bits */

		err = PW_READ_USER(&tid, sizeof(tid), st->tstate + cfg->off.tstate_thread_id);
		id = tid;
	} else {
		err = PW_READ_USER(&id, sizeof(id), st->tstate + cfg->off.tstate_thread_id);
	}
	if (err)
		goto fault;
	if (id == st->want_id) {
		st->found = st->tstate;
		return 1;
	}
	err = PW_READ_USER(&next, sizeof(next), st->tstate + cfg->off.tstate_next);
	if (err)
		goto fault;
	st->tstate = next;
	return 0;
fault:
	st->err = err;
	return 1;
}

/* ---- frame walk ----------------------------------------------------------------------- */

/* Bytes of data stack one read copies. A chunk holds 16 KiB by default, so a stack that
 * fits one chunk costs one read; the buffer has room for one frame more, so a frame that
 * starts inside the window is copied with a constant size. */
#define PW_WINDOW_MAX 16384
#define PW_WINDOW_BUF (PW_WINDOW_MAX + PW_FRAME_READ_MAX)
/* Code objects whose tag one walk remembers (direct-mapped, a power of two). */
#define PW_TAGMEMO_SLOTS 32

/* What one walk keeps besides its state, too big for the BPF stack (a per-CPU scratch slot
 * there): a copy of the data stack read at sample time, so frames inside it cost no read of
 * their own, and the tags of the code objects this walk has already read, so a function
 * that recurs costs one tag read per sample. Both are filled anew by pw_walk_start: a tag
 * is never carried from one sample to the next (the address may be another code object's
 * by then), and within one sample the thread is stopped, so a second read would return
 * the same bytes. */
struct pw_walkmem {
	__u64 win_lo;  /* target address of win[0] */
	__u32 win_len; /* bytes of the window read; 0 = no window */
	__u32 pad;
	__u64 memo_code[PW_TAGMEMO_SLOTS]; /* 0 = empty */
	__u32 memo_tag[PW_TAGMEMO_SLOTS];
	/* free-threaded builds, per memo_code: its bytecode size in code units (0: not read
	 * yet) and the copy co_tlbc[memo_copy_index] (0: not read yet), so that a function
	 * that recurs costs these reads once per sample too */
	__u32 memo_units[PW_TAGMEMO_SLOTS];
	__s32 memo_copy_index[PW_TAGMEMO_SLOTS];
	__u64 memo_copy[PW_TAGMEMO_SLOTS];
	/* The frames whose (code, tag) this walk read first: every other frame repeats one
	 * of them. More than PW_TAGMEMO_SLOTS: not all are listed. */
	__u32 nfresh;
	__u16 fresh[PW_TAGMEMO_SLOTS];
	__u64 frame[PW_FRAME_READ_MAX / 8]; /* the frame being visited */
	__u64 win[PW_WINDOW_BUF / 8];	    /* words, so copies out of it are word copies */
};

struct pw_walk {
	__u64 frame;	   /* next frame to visit */
	__u64 base_frame;  /* 3.15+: where a complete walk ends */
	__u64 cycle_mark;  /* Brent's cycle detection: a remembered frame ... */
	__u32 cycle_power; /* ... re-remembered at each power of two steps */
	__u32 cycle_len;
	__u32 visited;	 /* frames read, shims included */
	__u32 nframes;	 /* frames stored in out */
	__u32 max_depth; /* Python frames allowed; one more is a depth rejection */
	/* Data-stack check (3.11+): THREAD-owned frames must lie in the thread's stack
	 * chunks, newest chunk first and at falling addresses within a chunk. */
	__u64 chunk_lo, chunk_hi; /* data range of the chunk being walked */
	__u64 chunk_next;	  /* next (older) chunk to enter */
	__u64 last_thread_frame;
	__u8 check_chunks;
	__u8 last_was_entry;
	__u8 outcome; /* PW_OUT__CONTINUE until the walk ends */
	__u8 emit;    /* the last step produced frame `cur`, number nframes - 1 */
	struct pw_frame cur;
};

/* Prepare a walk from the thread state image `ts` (tstate_read_size bytes read from the
 * target). `current` is the innermost frame (already resolved through the cframe on
 * 3.11/3.12). */
PW_INLINE void pw_walk_init(struct pw_walk *w, const struct pw_proc *cfg, const __u8 *ts,
			    __u64 current, __u32 max_depth)
{
	w->frame = current;
	w->base_frame = 0;
	if (cfg->chain_kind == PW_CHAIN_BASE)
		w->base_frame = pw_load_u64(ts, cfg->off.tstate_base_frame, PW_TSTATE_READ_MAX);
	w->cycle_mark = 0;
	w->cycle_power = 1;
	w->cycle_len = 0;
	w->visited = 0;
	w->nframes = 0;
	w->max_depth = max_depth > PW_MAX_FRAMES_CAP ? PW_MAX_FRAMES_CAP : max_depth;
	w->last_was_entry = 0;
	w->outcome = PW_OUT__CONTINUE;
	w->emit = 0;
	w->chunk_lo = w->chunk_hi = 0;
	w->last_thread_frame = 0;
	w->check_chunks = cfg->off.tstate_datastack_chunk != PW_OFF_NONE &&
			  cfg->chain_kind != PW_CHAIN_FRAMEOBJ;
	w->chunk_next = w->check_chunks ? pw_load_u64(ts, cfg->off.tstate_datastack_chunk,
						      PW_TSTATE_READ_MAX)
					: 0;
}

/* The innermost frame of the thread state image `ts`: 3.11/3.12 through tstate->cframe
 * (one read), else the field itself. PW_OUT__CONTINUE with *current set, or the outcome. */
PW_INLINE __u8 pw_current_frame(const struct pw_proc *cfg, const __u8 *ts, __u64 *current)
{
	__u64 cframe;

	*current = pw_load_u64(ts, cfg->off.tstate_frame, PW_TSTATE_READ_MAX);
	if (cfg->off.cframe_current_frame == PW_OFF_NONE)
		return PW_OUT__CONTINUE;
	cframe = *current;
	if (!cframe)
		return PW_OUT_EMPTY;
	if (PW_READ_USER(current, sizeof(*current), cframe + cfg->off.cframe_current_frame))
		return PW_OUT_READ_FAULT;
	return PW_OUT__CONTINUE;
}

/* Copy [lo, hi) of the target's data stack into the window, at most PW_WINDOW_MAX bytes
 * ending at hi. A failed read leaves no window: each frame is then read on its own, and
 * judged by the same checks. */
PW_INLINE void pw_window_fill(struct pw_walkmem *m, __u64 lo, __u64 hi)
{
	__u64 len;

	m->win_len = 0;
	if (hi <= lo || ((lo | hi) & 7))
		return;
	if (hi - lo > PW_WINDOW_MAX)
		lo = hi - PW_WINDOW_MAX;
	len = hi - lo;
	if (len > PW_WINDOW_MAX)
		return;
	if (PW_READ_USER(m->win, (__u32)len, lo))
		return;
	m->win_lo = lo;
	m->win_len = (__u32)len;
}

/* Start a walk: pw_walk_init, a fresh tag memory, and on 3.11+ the live part of the newest
 * data-stack chunk (from its header to datastack_top) in one read. */
PW_INLINE void pw_walk_start(struct pw_walk *w, struct pw_walkmem *m, const struct pw_proc *cfg,
			     const __u8 *ts, __u64 current, __u32 max_depth)
{
	pw_walk_init(w, cfg, ts, current, max_depth);
	PW_UNROLL
	for (int i = 0; i < PW_TAGMEMO_SLOTS; i++)
		m->memo_code[i] = 0;
	m->nfresh = 0;
	m->win_len = 0;
	if (w->check_chunks && w->chunk_next) {
		__u64 top = pw_load_u64(
			ts, cfg->off.tstate_datastack_chunk + PW_DATASTACK_TOP_AFTER_CHUNK,
			PW_TSTATE_READ_MAX);

		if (top > w->chunk_next && top - w->chunk_next < (1ull << 32))
			pw_window_fill(m, w->chunk_next, top);
	}
}

/* Does the window hold [addr, addr + size)? Its offset in the window, or -1. */
PW_INLINE long pw_window_off(const struct pw_walkmem *m, __u64 addr, __u32 size)
{
	__u64 off = addr - m->win_lo;

	if (addr < m->win_lo || off >= m->win_len || off + size > m->win_len || (addr & 7))
		return -1;
	return (long)off;
}

/* A THREAD-owned frame must be in the data stack: in the chunk being walked below the last
 * such frame, or in the next older chunk. A frame elsewhere, or a link that goes up the
 * stack, is a chain caught mid-update (or forged). Returns an outcome or CONTINUE. */
PW_INLINE __u8 pw_check_data_stack(struct pw_walk *w, const struct pw_walkmem *m, __u64 frame)
{
	__u64 hdr[2] = { 0, 0 };

	if (frame < w->chunk_lo || frame >= w->chunk_hi) {
		long woff;

		if (!w->chunk_next)
			return PW_OUT_TORN;
		woff = pw_window_off(m, w->chunk_next, sizeof(hdr));
		if (woff >= 0 && woff <= PW_WINDOW_MAX) {
			hdr[0] = m->win[(woff >> 3) & (PW_WINDOW_MAX / 8 - 1)];
			hdr[1] = m->win[((woff >> 3) & (PW_WINDOW_MAX / 8 - 1)) + 1];
		} else if (PW_READ_USER(hdr, sizeof(hdr), w->chunk_next))
			return PW_OUT_READ_FAULT;
		if (hdr[1] > (1ull << 32))
			return PW_OUT_TORN;
		w->chunk_lo = w->chunk_next + PW_CHUNK_DATA_OFFSET;
		w->chunk_hi = w->chunk_next + hdr[1];
		w->chunk_next = hdr[0];
		w->last_thread_frame = w->chunk_hi;
		if (frame < w->chunk_lo || frame >= w->chunk_hi)
			return PW_OUT_TORN;
	}
	if (frame >= w->last_thread_frame)
		return PW_OUT_TORN;
	w->last_thread_frame = frame;
	return PW_OUT__CONTINUE;
}

/* The frame at `addr` into m->frame: copied from the window when it holds it. A frame outside
 * it but inside the chunk being walked moves the window down to end at that frame: one
 * read for the next PW_WINDOW_MAX bytes of frames. Any other frame (a generator's, an
 * entry frame on the C stack, 3.10's heap frames) is one read of its own. */
PW_INLINE int pw_frame_fetch(const struct pw_walk *w, struct pw_walkmem *m, __u32 size, __u64 addr)
{
	long off = pw_window_off(m, addr, size);

	if (off < 0 && w->check_chunks && addr >= w->chunk_lo && addr + size <= w->chunk_hi) {
		pw_window_fill(m, w->chunk_lo, addr + size);
		off = pw_window_off(m, addr, size);
	}
	if (off >= 0 && off < PW_WINDOW_MAX) {
		__u32 first = (__u32)(off >> 3);

		/* whole words: a byte-wise copy would cost 14 times the instructions */
		PW_UNROLL
		for (int i = 0; i < PW_FRAME_READ_MAX / 8; i++)
			m->frame[i] = m->win[first + i];
		return 0;
	}
	return PW_READ_USER(m->frame, size, addr);
}

/* The memo slot of code object `code`. */
PW_INLINE __u32 pw_memo_slot(__u64 code)
{
	return (__u32)((code >> 4) ^ (code >> 13)) & (PW_TAGMEMO_SLOTS - 1);
}

/* The tag of the code object at `code` of frame number `index`, read from it now
 * (PW_OUT__CONTINUE), or the outcome that ends the walk. A code object this walk has read
 * already is not read again; its memo slot (pw_memo_slot) holds it afterwards. */
PW_INLINE __u8 pw_frame_tag(struct pw_walkmem *m, const struct pw_proc *cfg, __u64 code,
			    __u32 index, __u32 *tag)
{
	__u32 slot = pw_memo_slot(code);
	__u64 words[PW_CODE_TAG_WORDS];
	__u32 tag_size = cfg->off.code_tag_size;

	*tag = 0;
	if (m->memo_code[slot] == code) {
		*tag = m->memo_tag[slot];
		return PW_OUT__CONTINUE;
	}
	if (m->nfresh < PW_TAGMEMO_SLOTS)
		m->fresh[m->nfresh & (PW_TAGMEMO_SLOTS - 1)] = (__u16)index;
	m->nfresh++;
	m->memo_units[slot] = 0;
	m->memo_copy[slot] = 0;
	if (cfg->off.code_tag == PW_OFF_NONE) {
		m->memo_code[slot] = code;
		m->memo_tag[slot] = 0;
		return PW_OUT__CONTINUE;
	}
	if (tag_size > sizeof(words))
		tag_size = sizeof(words);
	PW_ZERO(words);
	if (PW_READ_USER(words, tag_size, code + cfg->off.code_tag))
		return PW_OUT_READ_FAULT;
	if (cfg->code_tag_name < PW_CODE_TAG_WORDS) {
		/* 3.10/3.11 have no per-object version: the name's text tells a replacement
		 * object with recycled pointers apart */
		__u64 name[PW_NAME_TAG_SIZE / 8];

		PW_ZERO(name);
		if (PW_READ_USER(name, sizeof(name),
				 words[cfg->code_tag_name & (PW_CODE_TAG_WORDS - 1)] +
					 PW_NAME_TAG_START))
			return PW_OUT_READ_FAULT;
		*tag = pw_code_tag(words, cfg->off.code_tag_mask, name);
	} else {
		*tag = pw_code_tag(words, cfg->off.code_tag_mask, 0);
	}
	m->memo_code[slot] = code;
	m->memo_tag[slot] = *tag;
	return PW_OUT__CONTINUE;
}

/* Free-threaded builds: the instruction pointer of frame image `buf` (code object `code`)
 * as an offset in code units, proven to lie inside one copy of that code object's
 * bytecode: the main copy (co_code_adaptive, also co_tlbc[0]) or the thread's own copy
 * co_tlbc[tlbc_index]. A pointer inside neither is never turned into a line: the sample is
 * rejected (PW_OUT_BAD_TLBC). Returns PW_OUT__CONTINUE with *instr set, or the outcome. */
PW_INLINE __u8 pw_tlbc_instr(struct pw_walkmem *m, const struct pw_proc *cfg, const __u8 *buf,
			     __u64 code, __u64 ip, __u32 *instr)
{
	__u64 start = code + cfg->off.code_adaptive, nunits = 0, arr = 0, arr_size = 0, copy = 0;
	__s32 index = (__s32)pw_load_u32(buf, cfg->off.frame_tlbc_index, PW_FRAME_READ_MAX);
	/* pw_frame_tag has put `code` in its slot: what this walk read of it is there */
	__u32 slot = pw_memo_slot(code);
	int memo = m->memo_code[slot] == code;

	if (memo && m->memo_units[slot]) {
		nunits = m->memo_units[slot];
	} else {
		if (PW_READ_USER(&nunits, sizeof(nunits), code + cfg->off.code_ob_size))
			return PW_OUT_READ_FAULT;
		/* a code object holds at most INT_MAX bytes of bytecode */
		if (nunits == 0 || nunits > (1ull << 30))
			return PW_OUT_BAD_FRAME;
		if (memo)
			m->memo_units[slot] = (__u32)nunits;
	}
	if (ip >= start && ip - start < 2 * nunits) {
		*instr = (__u32)((ip - start) >> 1);
		return PW_OUT__CONTINUE;
	}
	if (index <= 0)
		return PW_OUT_BAD_TLBC;
	if (memo && m->memo_copy[slot] && m->memo_copy_index[slot] == index) {
		copy = m->memo_copy[slot];
	} else {
		if (PW_READ_USER(&arr, sizeof(arr), code + cfg->off.code_tlbc) || !arr)
			return PW_OUT_BAD_TLBC;
		if (PW_READ_USER(&arr_size, sizeof(arr_size), arr))
			return PW_OUT_READ_FAULT;
		if ((__u64)index >= arr_size)
			return PW_OUT_BAD_TLBC;
		/* _PyCodeArray: Py_ssize_t size, then the entries */
		if (PW_READ_USER(&copy, sizeof(copy), arr + 8 + 8 * (__u64)index))
			return PW_OUT_READ_FAULT;
		if (memo && copy) {
			m->memo_copy[slot] = copy;
			m->memo_copy_index[slot] = index;
		}
	}
	if (!copy || ip < copy || ip - copy >= 2 * nunits)
		return PW_OUT_BAD_TLBC;
	*instr = (__u32)((ip - copy) >> 1);
	return PW_OUT__CONTINUE;
}

/* 3.11+ (default builds): a frame's instruction pointer `ip` in code object `code` as an
 * offset in 2-byte code units; before the first instruction (3.11/3.12 prev_instr =
 * start - 1) is PW_INSTR_NONE. An offset never reaches PW_INSTR_TASK. */
PW_INLINE __u32 pw_instr_offset(const struct pw_proc *cfg, __u64 code, __u64 ip)
{
	__u64 start = code + cfg->off.code_adaptive;

	return ip >= start && ip - start < 0x1fffffffcull ? (__u32)((ip - start) >> 1)
							  : PW_INSTR_NONE;
}

/* Visit one frame. Returns 1 when the walk has ended (w->outcome says how), 0 to go on.
 * A Python frame to ship is left in w->cur with w->emit set; the caller stores it as frame
 * w->nframes - 1 (so this function writes only through `w` and `m`, and the BPF side can
 * verify it once as a global function). */
PW_INLINE int pw_walk_step(struct pw_walk *w, const struct pw_proc *cfg, struct pw_walkmem *m)
{
	const __u8 *buf = (const __u8 *)m->frame;
	__u32 size = cfg->off.frame_read_size;
	__u64 code, previous;
	__u8 owner = 0;
	int err;

	w->emit = 0;
	if (cfg->chain_kind == PW_CHAIN_BASE) {
		/* 3.15+: complete iff the chain reaches tstate->base_frame (CPython PR #141912);
		 * NULL before it means the sample caught a push/pop half done. */
		if (w->frame == w->base_frame && w->base_frame) {
			w->outcome = w->nframes ? PW_OUT_SHIPPED : PW_OUT_EMPTY;
			return 1;
		}
		if (!w->frame) {
			w->outcome = PW_OUT_TORN;
			return 1;
		}
	} else if (!w->frame) {
		if (!w->visited)
			w->outcome = PW_OUT_EMPTY;
		else if (cfg->chain_kind == PW_CHAIN_FRAMEOBJ || w->last_was_entry)
			/* 3.10: f_back NULL is all there is to check. 3.11-3.14: the bottom
			 * frame must be an entry frame; anything else ended early. */
			w->outcome = w->nframes ? PW_OUT_SHIPPED : PW_OUT_EMPTY;
		else
			w->outcome = PW_OUT_TORN;
		return 1;
	}

	if (w->frame == w->cycle_mark) {
		w->outcome = PW_OUT_CYCLE;
		return 1;
	}
	if (w->cycle_len == w->cycle_power) {
		w->cycle_mark = w->frame;
		w->cycle_power <<= 1;
		w->cycle_len = 0;
	}
	w->cycle_len++;

	if (size > PW_FRAME_READ_MAX)
		size = PW_FRAME_READ_MAX;
	PW_ZERO(m->frame);
	err = pw_frame_fetch(w, m, size, w->frame);
	if (err) {
		w->outcome = PW_OUT_READ_FAULT;
		return 1;
	}
	w->visited++;
	code = pw_load_u64(buf, cfg->off.frame_code, PW_FRAME_READ_MAX);
	code &= ~(__u64)((1u << cfg->code_tag_bits) - 1);
	previous = pw_load_u64(buf, cfg->off.frame_previous, PW_FRAME_READ_MAX);
	if (cfg->off.frame_owner != PW_OFF_NONE) {
		owner = pw_load_u8(buf, cfg->off.frame_owner, PW_FRAME_READ_MAX);
		if (owner > cfg->max_owner) {
			w->outcome = PW_OUT_BAD_FRAME;
			return 1;
		}
	}

	if (owner == cfg->shim_owner) {
		/* Entry/shim frame (C -> Python boundary): part of the chain, never shipped. */
		w->last_was_entry = 1;
	} else {
		__u32 instr, tag;

		if (!code) {
			w->outcome = PW_OUT_BAD_FRAME;
			return 1;
		}
		if (w->nframes >= w->max_depth) {
			w->outcome = PW_OUT_DEPTH;
			return 1;
		}
		if (w->check_chunks && owner == PW_OWNER_THREAD) {
			__u8 verdict = pw_check_data_stack(w, m, w->frame);

			if (verdict != PW_OUT__CONTINUE) {
				w->outcome = verdict;
				return 1;
			}
		}
		if (cfg->chain_kind == PW_CHAIN_FRAMEOBJ) {
			/* 3.10 f_lasti: index in code units, -1 before the first instruction */
			instr = pw_load_u32(buf, cfg->off.frame_instr, PW_FRAME_READ_MAX);
		} else if (cfg->off.frame_tlbc_index) {
			__u64 ip = pw_load_u64(buf, cfg->off.frame_instr, PW_FRAME_READ_MAX);
			/* the tag first: it gives the code object its memo slot */
			__u8 verdict = pw_frame_tag(m, cfg, code, w->nframes, &tag);

			if (verdict == PW_OUT__CONTINUE)
				verdict = pw_tlbc_instr(m, cfg, buf, code, ip, &instr);

			if (verdict != PW_OUT__CONTINUE) {
				w->outcome = verdict;
				return 1;
			}
		} else {
			instr = pw_instr_offset(
				cfg, code,
				pw_load_u64(buf, cfg->off.frame_instr, PW_FRAME_READ_MAX));
		}
		w->last_was_entry = cfg->off.frame_is_entry != PW_OFF_NONE &&
				    pw_load_u8(buf, cfg->off.frame_is_entry, PW_FRAME_READ_MAX);
		{
			__u8 verdict = pw_frame_tag(m, cfg, code, w->nframes, &tag);

			if (verdict != PW_OUT__CONTINUE) {
				w->outcome = verdict;
				return 1;
			}
		}
		w->cur.code = code;
		w->cur.instr = instr;
		w->cur.tag = tag;
		w->emit = 1;
		w->nframes++;
	}
	w->frame = previous;
	return 0;
}

/* The most frames a walk can visit: shipped frames plus one entry shim for each, plus the
 * final NULL/base check. The loop bound; a walk still going past it is a depth rejection. */
PW_INLINE __u32 pw_walk_bound(__u32 max_depth)
{
	return 2 * max_depth + 2;
}

#endif /* PW_WALK_H */
