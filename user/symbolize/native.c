// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include "symbolize/native.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdwfl.h>

#include "symbolize/debugfile.h"
#include "symbolize/demangle.h"
#include "lib/log.h"
#include "symbolize/native_merge.h"
#include "inspect/proc.h"
#include "lib/strtab.h"
#include "symbolize/symindex.h"
#include "lib/util.h"

/* Processes whose binaries are kept open; the least recently sampled is closed first, when
 * there are more than MAX_PROCS or they hold more than NATIVE_BUDGET bytes. */
#define MAX_PROCS 16
/* A process is charged what stays with it: the bytes of the binaries and debug files libdwfl
 * holds mapped for it (its CFI and symbol tables are read from there, and their parsed forms
 * grow with them), its name slots and its demangled names. Recounted after its maps are read
 * and at most every CHARGE_NS while it is sampled, as naming loads debug files lazily. */
#define CHARGE_NS (1000 * 1000 * 1000ull)
/* Names and mappings of recent return addresses per process: a hit costs no module or
 * symbol lookup. */
#define NAME_SLOTS 4096
/* An address outside every known module re-reads the maps at most this often (a JIT's
 * code is in no module: it must not cost a maps read per sample). */
#define RELOAD_NS (10 * 1000 * 1000ull)

struct name_slot {
	uint64_t pc;
	const char *symbol, *module;
	uint64_t rel;
	Dwfl_Module *mod; /* NULL: in none */
};

struct native;
struct nproc;

/* Each module's user data: whose it is (its debug file is looked for in that process's
 * root and charged to it), its symbol index and the size of the debug file it uses. */
struct nmod {
	struct native *n;
	struct nproc *p;
	struct symindex *index; /* NULL until its first lookup (module_index) */
	uint64_t debug_bytes;
};

struct nproc {
	pid_t pid;
	Dwfl *dwfl;
	bool attached;
	int eval_named; /* 0: not known yet, 1: yes, -1: no (see eval_loop_named) */
	uint64_t used_ns, reload_ns, charged_ns;
	uint64_t bytes;		  /* what it is charged (see CHARGE_NS) */
	uint64_t demangled_bytes; /* of that, its demangled names */
	uint64_t index_bytes;	  /* and its modules' symbol indexes (module_index) */
	struct name_slot *names;
	struct strtab *demangled; /* C++ names as shown, kept while the process is */
	Dwfl_Callbacks callbacks;
	/* the sample being unwound: what the memory and register callbacks answer from */
	const struct pw_ustack *uh; /* its first PW_USTACK_DATA_OFF + size bytes */
	const uint8_t *stack;
	pid_t tid;
	uint64_t pcs[NATIVE_MAX_FRAMES];
	uint64_t sps[NATIVE_MAX_FRAMES]; /* each frame's stack pointer, 0 when unknown */
	bool act[NATIVE_MAX_FRAMES];
	uint32_t npcs;
	uint64_t used;	  /* bytes of the stack copy this unwind read */
	bool read_failed; /* it needed memory it did not have */
};

struct native {
	struct nproc procs[MAX_PROCS];
	uint64_t bytes; /* the processes' charges, summed */
	struct native_stats stats;
	/* the sample's frames root first, for native_find_evals */
	uint64_t sp[NATIVE_MAX_FRAMES];
	bool named_eval[NATIVE_MAX_FRAMES], is_eval[NATIVE_MAX_FRAMES];
};

struct native *native__new(uint64_t budget)
{
	struct native *n;

	elf_version(EV_CURRENT);
	n = calloc(1, sizeof(struct native));
	if (n)
		n->stats.budget = budget;
	return n;
}

static int free_module(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr start, void *arg)
{
	struct nmod *m = *user;

	(void)mod;
	(void)name;
	(void)start;
	(void)arg;
	if (m) {
		if (m->index) {
			symindex__free(m->index);
			free(m->index);
		}
		free(m);
		*user = NULL;
	}
	return DWARF_CB_OK;
}

static void close_proc(struct native *n, struct nproc *p)
{
	n->bytes -= p->bytes;
	if (p->dwfl) {
		dwfl_getmodules(p->dwfl, free_module, NULL, 0);
		dwfl_end(p->dwfl);
	}
	free(p->names);
	strtab__free(p->demangled);
	memset(p, 0, sizeof(*p));
}

void native__free(struct native *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < MAX_PROCS; i++)
		close_proc(n, &n->procs[i]);
	free(n);
}

const struct native_stats *native__stats(const struct native *n)
{
	return &n->stats;
}

/* ---- libdwfl's view of one sample --------------------------------------------------- */

/* Memory outside the stack copy: the read-only contents of a mapped binary (what CFI
 * expressions may look at); anything else is unknown, which ends the unwind there. */
static bool read_module(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	GElf_Addr bias;
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	size_t nph, rawsize;
	char *raw = elf ? elf_rawfile(elf, &rawsize) : NULL;

	if (!raw || elf_getphdrnum(elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t va = addr - bias;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || (ph.p_flags & PF_W))
			continue;
		/* each bound as a difference: the headers are the target's, a sum can wrap */
		if (va < ph.p_vaddr || ph.p_filesz < 8 || va - ph.p_vaddr > ph.p_filesz - 8 ||
		    rawsize < 8 || ph.p_offset > rawsize - 8 ||
		    va - ph.p_vaddr > rawsize - 8 - ph.p_offset)
			continue;
		memcpy(result, raw + ph.p_offset + (va - ph.p_vaddr), 8);
		return true;
	}
	return false;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct nproc *p = arg;
	uint64_t sp = p->uh->regs[PW_UREG_SP];
	uint64_t below = p->uh->flags & PW_USF_REDZONE ? PW_USTACK_REDZONE : 0;
	uint64_t base = sp - below;

	if (addr >= base && addr - base <= p->uh->size && p->uh->size - (addr - base) >= 8) {
		memcpy(result, p->stack + (addr - base), 8);
		if (addr >= sp && addr - sp + 8 > p->used)
			p->used = addr - sp + 8;
		return true;
	}
	if (read_module(dwfl, addr, result))
		return true;
	/* libdwfl ends the unwind there as if it were the outermost frame: remember it, so a
	 * stack cut by --native-stack is not taken as whole */
	p->read_failed = true;
	return false;
}

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct nproc *p = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct nproc *p = arg;
	const __u64 *r = p->uh->regs;
#if defined(__x86_64__)
	/* DWARF register numbers of x86-64 */
	Dwarf_Word bx = r[PW_UREG_BX], bp_sp[2] = { r[PW_UREG_BP], r[PW_UREG_SP] };
	Dwarf_Word r12_15[4] = { r[PW_UREG_R12], r[PW_UREG_R13], r[PW_UREG_R14], r[PW_UREG_R15] };
	/* rip as a register too: the PLT's CFI computes the CFA from it (DW_OP_breg16) */
	Dwarf_Word ip = r[PW_UREG_IP];

	if (!dwfl_thread_state_registers(thread, 3, 1, &bx) ||
	    !dwfl_thread_state_registers(thread, 6, 2, bp_sp) ||
	    !dwfl_thread_state_registers(thread, 12, 4, r12_15) ||
	    !dwfl_thread_state_registers(thread, 16, 1, &ip))
		return false;
	dwfl_thread_state_register_pc(thread, r[PW_UREG_IP]);
	return true;
#else
	(void)thread;
	(void)r;
	return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* The open process sampled least recently, other than `keep`; NULL when there is none. */
static struct nproc *least_recent(struct native *n, const struct nproc *keep)
{
	struct nproc *oldest = NULL;

	for (size_t i = 0; i < MAX_PROCS; i++)
		if (n->procs[i].dwfl && &n->procs[i] != keep &&
		    (!oldest || n->procs[i].used_ns < oldest->used_ns))
			oldest = &n->procs[i];
	return oldest;
}

/* Before `bytes` more are mapped for `p`: close the least recently sampled other processes
 * while all would hold more than the budget (`p` stays, whatever its size). */
static void make_room(struct native *n, struct nproc *p, uint64_t bytes)
{
	while (bytes > n->stats.budget || n->bytes > n->stats.budget - bytes) {
		struct nproc *oldest = least_recent(n, p);

		if (!oldest)
			break;
		pw_debug("native: %d: closed, its binaries (%llu bytes) over the budget\n",
			 (int)oldest->pid, (unsigned long long)oldest->bytes);
		close_proc(n, oldest);
		n->stats.evicted++;
	}
}

/* libdwfl's find_debuginfo: pywalk's own search (debugfile.h), not elfutils' standard
 * one, which opens whatever path the target's debuglink names, blocking, and follows
 * symlinks out of the target's root. */
static int find_debuginfo(Dwfl_Module *mod, void **user, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink, GElf_Word crc,
			  char **debug_name)
{
	struct nmod *m = *user;
	const unsigned char *bid = NULL;
	GElf_Addr vaddr;
	int len;
	uint64_t size = 0;
	struct debugfile_want w;
	int fd;

	(void)modname;
	(void)base;
	if (!m)
		return -1;
	len = dwfl_module_build_id(mod, &bid, &vaddr);
	w = (struct debugfile_want){
		.pid = m->p->pid,
		.file = file_name,
		.debuglink = debuglink,
		.crc = crc,
		.build_id = len > 0 ? bid : NULL,
		.build_id_len = len > 0 ? (size_t)len : 0,
	};
	if (debuglink && !debuglink_name_ok(debuglink))
		pw_debug("native: %d: %s: its debuglink is no plain file name: not looked for\n",
			 (int)m->p->pid, file_name ? file_name : "?");
	fd = debugfile_find(&w, debug_name, &size);
	if (fd < 0)
		return -1;
	/* charged before libdwfl maps it */
	make_room(m->n, m->p, size);
	m->debug_bytes = size;
	return fd;
}

static void set_callbacks(struct nproc *p)
{
	p->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = find_debuginfo,
	};
}

/* Give a newly reported module its user data. */
static void adopt_module(struct native *n, struct nproc *p, Dwfl_Module *mod)
{
	void **user;

	if (!mod)
		return;
	dwfl_module_info(mod, &user, NULL, NULL, NULL, NULL, NULL, NULL);
	if (*user)
		return;
	*user = calloc(1, sizeof(struct nmod));
	if (*user)
		**(struct nmod **)user = (struct nmod){ .n = n, .p = p };
}

/* ---- modules ------------------------------------------------------------------------- */

/* The load bias of the file mapped by `m` (its lowest-offset mapping). */
static int load_bias(Elf *e, const struct proc_map *m, GElf_Addr *bias)
{
	size_t nph;

	if (elf_getphdrnum(e, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t off_page, va_page;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		off_page = ph.p_offset & ~4095ull;
		va_page = ph.p_vaddr & ~4095ull;
		if (m->offset < off_page ||
		    (m->offset >= ph.p_offset && m->offset - ph.p_offset >= ph.p_filesz))
			continue;
		*bias = m->start - (va_page + (m->offset - off_page));
		return 0;
	}
	return -ENOENT;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Where the kernel mapped the vDSO in `pid` (its auxiliary vector), 0 if unknown. */
static uint64_t vdso_address(pid_t pid)
{
	uint64_t av[2 * 64] = { 0 };
	char path[64];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, av, sizeof(av));
	close(fd);
	for (ssize_t i = 0; len > 0 && (i + 2) * 8 <= len; i += 2)
		if (av[i] == AT_SYSINFO_EHDR)
			return av[i + 1];
	return 0;
}

/* Whether a reported module holds `addr`. dwfl_addrmodule can answer with the module that
 * ends there: the dynamic loader is mapped right after the vDSO, and would be taken as
 * known. */
static bool module_holds(Dwfl *dwfl, uint64_t addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Addr low = 0, high = 0;

	if (mod)
		dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL);
	return mod && low <= addr && addr < high;
}

#define MINIDEBUG_NAME ".gnu_debugdata"

/* The .gnu_debugdata section of `e` (MiniDebugInfo), NULL if it has none; where its name
 * lies in the file in *name_off. */
static Elf_Data *minidebug_section(Elf *e, uint64_t *name_off)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr strs;

	if (elf_getshdrstrndx(e, &shstrndx) || !gelf_getshdr(elf_getscn(e, shstrndx), &strs))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return NULL;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, MINIDEBUG_NAME)) {
			*name_off = strs.sh_offset + sh.sh_name;
			return elf_rawdata(scn, NULL);
		}
	}
	return NULL;
}

/* An in-memory copy of the first `size` bytes of fd (sealable), or -errno. */
static int memfd_copy(int fd, uint64_t size)
{
	int mfd = memfd_create("pywalk-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	off_t off = 0;

	if (mfd < 0)
		return -errno;
	while ((uint64_t)off < size) {
		ssize_t n = sendfile(mfd, fd, &off, (size_t)(size - (uint64_t)off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrunk: the copy is what there was */
	}
	return mfd;
}

/* libdwfl unpacks a binary's MiniDebugInfo with no bound on its size, so a binary that has
 * one is handed to it as a sealed copy (the target can no longer change it) whose
 * .gnu_debugdata was first unpacked here, into nothing: past MINIDEBUG_MAX (or broken) the
 * copy's section is renamed, and libdwfl unwinds the module without it. *fd is replaced
 * by the copy. 0, or -errno: the module is not to be reported. */
static int vet_minidebug(pid_t pid, const char *path, int *fd, uint64_t size)
{
	static const char renamed[] = ".pywalk_refuse";
	Elf *e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	uint64_t name_off = 0;
	Elf_Data *d = e ? minidebug_section(e, &name_off) : NULL;
	bool refuse = false;
	int copy, err = 0;

	_Static_assert(sizeof(renamed) == sizeof(MINIDEBUG_NAME), "same length");
	if (e)
		elf_end(e);
	if (!d)
		return 0;
	copy = memfd_copy(*fd, size);
	if (copy < 0)
		return copy;
	e = elf_begin(copy, ELF_C_READ_MMAP, NULL);
	d = e ? minidebug_section(e, &name_off) : NULL;
	refuse = d && !minidebug_ok(d->d_buf, d->d_size, MINIDEBUG_MAX);
	if (e)
		elf_end(e);
	if (refuse) {
		pw_debug("native: %d: %s: its MiniDebugInfo does not unpack within %llu bytes: "
			 "not used\n",
			 (int)pid, path, MINIDEBUG_MAX);
		if (pwrite(copy, renamed, sizeof(renamed), (off_t)name_off) != sizeof(renamed))
			err = -EIO;
	}
	if (!err &&
	    fcntl(copy, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL))
		err = -errno;
	if (err) {
		close(copy);
		return err;
	}
	close(*fd);
	*fd = copy;
	return 0;
}

/* Report every file-backed mapping not yet known: its binary is opened through the
 * target's view of the file system and must be the mapping's device and inode. Each is
 * charged (make_room) before libdwfl maps it. */
static int report_maps(struct native *n, struct nproc *p)
{
	struct proc_maps maps = { 0 };
	int err = proc_read_maps(p->pid, &maps);
	uint64_t vdso = vdso_address(p->pid), added = 0;

	if (err)
		return err;
	if (p->attached)
		dwfl_report_begin_add(p->dwfl);
	else
		dwfl_report_begin(p->dwfl);
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_map *m = &maps.maps[i];
		GElf_Addr bias;
		Elf *e;
		int fd;
		struct stat st;
		Dwfl_Module *mod;

		if (m->start == vdso && !module_holds(p->dwfl, m->start)) {
			/* the kernel's image: libdwfl reads it from the process's memory */
			char name[32];

			snprintf(name, sizeof(name), "[vdso: %d]", (int)p->pid);
			adopt_module(n, p, dwfl_report_module(p->dwfl, name, m->start, m->end));
			continue;
		}
		if (!m->path || m->path[0] != '/' || !m->inode)
			continue;
		/* the file's first mapping only (the others are its other segments) */
		if (i && maps.maps[i - 1].inode == m->inode && maps.maps[i - 1].path &&
		    !strcmp(maps.maps[i - 1].path, m->path))
			continue;
		if (module_holds(p->dwfl, m->start))
			continue;
		fd = proc_open_mapped_file(p->pid, m);
		if (fd < 0) {
			pw_debug("native: %d: cannot open %s: %s\n", (int)p->pid, m->path,
				 strerror(-fd));
			continue;
		}
		e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (!e || load_bias(e, m, &bias)) {
			if (e)
				elf_end(e);
			close(fd);
			continue;
		}
		elf_end(e);
		if (fstat(fd, &st) || st.st_size <= 0) {
			close(fd);
			continue;
		}
		err = vet_minidebug(p->pid, m->path, &fd, (uint64_t)st.st_size);
		if (err) {
			pw_debug("native: %d: %s: cannot copy it: %s\n", (int)p->pid, m->path,
				 strerror(-err));
			close(fd);
			err = 0;
			continue;
		}
		added += (uint64_t)st.st_size;
		make_room(n, p, added);
		/* libdwfl owns fd from here when it takes the module */
		mod = dwfl_report_elf(p->dwfl, base_name(m->path), m->path, fd, bias, true);
		if (!mod) {
			pw_debug("native: %d: %s: %s\n", (int)p->pid, m->path, dwfl_errmsg(-1));
			close(fd);
		}
		adopt_module(n, p, mod);
	}
	proc_maps_free(&maps);
	dwfl_report_end(p->dwfl, NULL, NULL);
	p->eval_named = 0; /* a module that names it may be new */
	return 0;
}

static int charge_module(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr start,
			 void *arg)
{
	uint64_t *bytes = arg;
	const struct nmod *m = *user;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t size = 0;

	(void)name;
	(void)start;
	if (elf && elf_rawfile(elf, &size))
		*bytes += size;
	/* a separate debug file, once find_debuginfo has found one, at its size then */
	if (m)
		*bytes += m->debug_bytes;
	return DWARF_CB_OK;
}

/* Recount what `p` holds, then close the least recently sampled other processes while all
 * of them hold more than the budget (the one being unwound stays, whatever its size). */
static void charge(struct native *n, struct nproc *p, uint64_t now)
{
	uint64_t bytes = NAME_SLOTS * sizeof(*p->names) + p->demangled_bytes + p->index_bytes;

	dwfl_getmodules(p->dwfl, charge_module, &bytes, 0);
	n->bytes += bytes - p->bytes;
	p->bytes = bytes;
	p->charged_ns = now;
	if (n->bytes > n->stats.peak_bytes)
		n->stats.peak_bytes = n->bytes;
	make_room(n, p, 0);
}

static struct nproc *proc_for(struct native *n, pid_t pid, uint64_t now)
{
	struct nproc *p = NULL;

	for (size_t i = 0; i < MAX_PROCS; i++) {
		if (n->procs[i].dwfl && n->procs[i].pid == pid) {
			p = &n->procs[i];
			p->used_ns = now;
			return p;
		}
		if (!n->procs[i].dwfl && !p)
			p = &n->procs[i];
	}
	if (!p) {
		/* MAX_PROCS open: the least recently sampled makes room */
		p = least_recent(n, NULL);
		n->stats.evicted++;
	}
	close_proc(n, p);
	p->pid = pid;
	p->used_ns = now;
	p->names = calloc(NAME_SLOTS, sizeof(*p->names));
	p->demangled = strtab__new();
	set_callbacks(p);
	p->dwfl = dwfl_begin(&p->callbacks);
	if (!p->names || !p->demangled || !p->dwfl || report_maps(n, p) ||
	    !dwfl_attach_state(p->dwfl, NULL, pid, &thread_callbacks, p)) {
		pw_debug("native: cannot read the binaries of %d: %s\n", pid, dwfl_errmsg(-1));
		close_proc(n, p);
		return NULL;
	}
	p->attached = true;
	charge(n, p, now);
	return p;
}

void native__forget(struct native *n, pid_t pid)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (n->procs[i].dwfl && n->procs[i].pid == pid)
			close_proc(n, &n->procs[i]);
}

/* ---- unwinding ----------------------------------------------------------------------- */

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct nproc *p = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp = 0;
	bool act;

	if (p->npcs >= NATIVE_MAX_FRAMES || !dwfl_frame_pc(state, &pc, &act))
		return DWARF_CB_ABORT;
#if defined(__x86_64__)
	/* DWARF register 7 is rsp: the leaf's is the sampled one, a caller's is its callee's
	 * CFA, so frame i's own stack lies in [sp_i, sp_{i+1}) */
	if (dwfl_frame_reg(state, 7, &sp))
		sp = 0;
#endif
	p->pcs[p->npcs] = pc;
	p->sps[p->npcs] = sp;
	p->act[p->npcs++] = act;
	return DWARF_CB_OK;
}

/* 0: unwound to the thread's first frame; else where it stopped is unknown */
static int unwind(struct nproc *p)
{
	int rc;

	p->npcs = 0;
	p->used = 0;
	p->read_failed = false;
	rc = dwfl_getthread_frames(p->dwfl, p->tid, on_frame, p);
	return rc == 0 && p->read_failed ? -1 : rc;
}

static bool is_eval_symbol(const char *s)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";

	/* a ".cold" part of it runs in the same activation */
	return s && !strncmp(s, eval, sizeof(eval) - 1) &&
	       (s[sizeof(eval) - 1] == 0 || s[sizeof(eval) - 1] == '.');
}

/* A C++ name demangled (kept in the process's table, so it lives as long as libdwfl's), a
 * C name as it is. */
static const char *shown_name(struct nproc *p, const char *sym)
{
	char *d = demangle(sym);
	size_t before = strtab__count(p->demangled);
	int64_t id;

	if (!d)
		return sym;
	id = strtab__intern(p->demangled, d);
	if (strtab__count(p->demangled) != before)
		p->demangled_bytes += strlen(d) + 1 + 2 * sizeof(void *);
	free(d);
	return id < 0 ? sym : strtab__get(p->demangled, (size_t)id);
}

/* Where frame `f`'s module is mapped, for the profile's Mapping: the path the target maps
 * ("[vdso]" for the vDSO), the module's address range and its build-id. The range
 * starts at its first segment, which maps the file from offset 0. */
static void module_mapping(Dwfl_Module *mod, struct native_frame *f)
{
	const unsigned char *bid;
	const char *file = NULL;
	Dwarf_Addr start = 0, end = 0, vaddr;
	int len;

	f->path = f->module;
	f->start = f->limit = 0;
	f->build_id_len = 0;
	if (!mod)
		return;
	f->path = dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, &file, NULL);
	if (file)
		f->path = file;
	else if (!strncmp(f->path, "[vdso", 5))
		f->path = "[vdso]"; /* as the maps name it, which tools know has no file */
	f->start = start;
	f->limit = end;
	len = dwfl_module_build_id(mod, &bid, &vaddr);
	if (len > 0 && (size_t)len <= sizeof(f->build_id)) {
		memcpy(f->build_id, bid, (size_t)len);
		f->build_id_len = (uint8_t)len;
	}
}

/* `mod`'s function symbols by address, built at its first lookup and kept as the module's
 * user data (a NULL index: it has none, or memory ran out; its frames go unnamed). */
static const struct symindex *module_index(struct nproc *p, Dwfl_Module *mod)
{
	void **user;
	struct nmod *m;
	int n;
	struct sym_entry *e;
	struct symindex *x;
	size_t kept = 0;

	dwfl_module_info(mod, &user, NULL, NULL, NULL, NULL, NULL, NULL);
	m = *user;
	if (!m)
		return NULL;
	if (m->index)
		return m->index;
	n = dwfl_module_getsymtab(mod);
	x = calloc(1, sizeof(*x));
	e = n > 1 ? calloc((size_t)n, sizeof(*e)) : NULL;
	if (!x || (n > 1 && !e)) {
		free(x);
		free(e);
		return NULL;
	}
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || sym.st_shndx == SHN_UNDEF ||
		    !(type == STT_FUNC || type == STT_GNU_IFUNC ||
		      (type == STT_NOTYPE && sym.st_size)))
			continue;
		e[kept++] = (struct sym_entry){ .lo = addr,
						.hi = addr + sym.st_size,
						.name = name,
						.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL };
	}
	symindex__init(x, e, kept);
	m->index = x;
	p->index_bytes += sizeof(*x) + (size_t)(n > 1 ? n : 0) * sizeof(*e);
	return x;
}

/* The shown name of the function at `addr` in `mod`, NULL when no symbol holds it. */
static const char *symbol_at(struct nproc *p, Dwfl_Module *mod, uint64_t addr)
{
	const struct symindex *x = module_index(p, mod);
	struct sym_entry *s = x ? (struct sym_entry *)symindex__find(x, addr) : NULL;

	if (!s)
		return NULL;
	if (!s->shown)
		s->shown = shown_name(p, s->name);
	return s->shown;
}

static void name_frame(struct nproc *p, uint64_t pc, bool act, struct native_frame *f)
{
	/* a return address is past its call: look up the call */
	uint64_t look = act ? pc : pc - 1;
	struct name_slot *slot = &p->names[hash_mix64(look) % NAME_SLOTS];

	if (slot->pc != look || !slot->module) {
		Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, look);
		GElf_Addr bias = 0;

		slot->pc = look;
		slot->symbol = mod ? symbol_at(p, mod, look) : NULL;
		slot->module =
			mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL) : "?";
		if (mod)
			dwfl_module_getelf(mod, &bias);
		slot->rel = pc - bias;
		slot->mod = mod;
	}
	f->pc = pc;
	f->symbol = slot->symbol;
	f->module = slot->module ? slot->module : "?";
	f->rel = slot->pc == look ? slot->rel : pc;
	f->is_eval = false; /* decided with the sample's entry frames (native__unwind) */
	module_mapping(slot->mod, f);
}

/* Whether some module names the eval loop wholly: an exported _PyEval_EvalFrameDefault of
 * a plausible size, or a symbol table that names its parts too ("...Default.cold"). PGO
 * builds with function partitioning and no symbol table (Debian unstable's 3.13+) export
 * only a small piece of it; their activations run in unnamed code, and merging by the
 * names there would be a guess. */
static int each_module(Dwfl_Module *mod, void **user, const char *name, Dwarf_Addr start, void *arg)
{
	int *named = arg, n = dwfl_module_getsymtab(mod);
	bool whole = false, parts = false, found = false;

	(void)user;
	(void)name;
	(void)start;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *s = dwfl_module_getsym(mod, i, &sym, NULL);

		if (!s || strncmp(s, "_PyEval_EvalFrameDefault", 24))
			continue;
		if (!s[24]) {
			found = true;
			whole |= sym.st_size >= 0x4000;
		} else if (s[24] == '.') {
			parts = true;
		}
	}
	if (found && (whole || parts))
		*named = 1;
	return *named == 1 ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static bool eval_loop_named(struct nproc *p)
{
	if (!p->eval_named) {
		int named = -1;

		dwfl_getmodules(p->dwfl, each_module, &named, 0);
		p->eval_named = named;
	}
	return p->eval_named == 1;
}

/* Whether a frame of the last unwind is in no known module. */
static bool in_unknown_module(struct nproc *p)
{
	for (uint32_t i = 0; i < p->npcs; i++)
		if (!dwfl_addrmodule(p->dwfl, p->act[i] ? p->pcs[i] : p->pcs[i] - 1))
			return true;
	return false;
}

/* What record `u` says of its eval activations (the names are the process's). */
static struct native_evidence evidence(const struct pw_ustack *u)
{
	return (struct native_evidence){
		.has_shims = u->flags & PW_USF_SHIMS,
		.shim = (const uint64_t *)u->shim, /* the same 64-bit words */
		.nshims = u->nshims,
		.kept = u->nshims < PW_USTACK_SHIMS ? u->nshims : PW_USTACK_SHIMS,
	};
}

/* Mark out's eval activations (native_find_evals: by the sample's entry frames, else by
 * name); a sample they cannot be told in is not to be merged. */
static enum native_status find_evals(struct native *n, struct nproc *p, const struct pw_ustack *u,
				     struct native_stack *out)
{
	struct native_evidence ev = evidence(u);
	enum native_evals found;

	for (uint32_t i = 0; i < out->n; i++) {
		n->sp[i] = p->sps[out->n - 1 - i];
		n->named_eval[i] = is_eval_symbol(out->f[i].symbol);
	}
	ev.loop_named = eval_loop_named(p);
	found = native_find_evals(n->sp, n->named_eval, out->n, &ev, n->is_eval);
	if (found != NATIVE_EVALS_FOUND) {
		pw_debug("native: %u frames, %u entry frames%s: %s\n", out->n, u->nshims,
			 ev.has_shims ? "" : " (none on the C stack)",
			 found == NATIVE_EVALS_DEEP	 ? "too many to match"
			 : found == NATIVE_EVALS_UNNAMED ? "the eval loop has no name"
							 : "they do not pair up with the frames");
		return found == NATIVE_EVALS_DEEP      ? NATIVE_DEEP
		       : found == NATIVE_EVALS_UNNAMED ? NATIVE_EVAL_UNNAMED
						       : NATIVE_MISMATCH;
	}
	for (uint32_t i = 0; i < out->n; i++)
		out->f[i].is_eval = n->is_eval[i];
	return NATIVE_OK;
}

void native__unwind(struct native *n, const struct pw_sample_hdr *h, const struct pw_stack_hdr *rec,
		    struct native_stack *out)
{
	uint64_t t0 = now_ns();
	const struct pw_ustack *u = (const struct pw_ustack *)rec;
	struct nproc *p;
	int rc;

	out->n = 0;
	/* the pairing checked that len bytes follow the header; the rest is the sender's */
	if (rec->len < PW_USTACK_LEN_BASE || u->size > PW_USTACK_REDZONE + PW_USTACK_MAX ||
	    ((u->flags & PW_USF_REDZONE) && u->size < PW_USTACK_REDZONE) ||
	    rec->len != PW_USTACK_LEN_BASE + u->size) {
		out->status = NATIVE_MALFORMED;
		return;
	}
	/* not worth an unwind: it could not be merged (nor, mostly, unwound whole) */
	{
		struct native_evidence ev = evidence(u);

		if (native_too_deep(&ev)) {
			out->status = NATIVE_DEEP;
			return;
		}
	}
	out->status = NATIVE_INCOMPLETE;
	p = proc_for(n, (pid_t)h->pid, t0);
	if (!p) {
		n->stats.incomplete++;
		return;
	}
	p->uh = u;
	p->stack = (const uint8_t *)rec + PW_USTACK_DATA_OFF;
	p->tid = (pid_t)h->tid;
	rc = unwind(p);
	/* stopped in, or passed through, no known module: a library loaded since the maps
	 * were read (libdwfl's frame-pointer fallback walks through code it has no CFI for,
	 * so with frame pointers, 3.15's default, such an unwind can end well, one frame
	 * standing for the library's several) */
	if (in_unknown_module(p) && t0 - p->reload_ns >= RELOAD_NS) {
		p->reload_ns = t0;
		n->stats.map_reloads++;
		if (!report_maps(n, p))
			rc = unwind(p);
		charge(n, p, t0);
	}
	if (rc == 0) {
		out->n = p->npcs;
		/* root first */
		for (uint32_t i = 0; i < p->npcs; i++)
			name_frame(p, p->pcs[p->npcs - 1 - i], p->act[p->npcs - 1 - i], &out->f[i]);
		out->status = find_evals(n, p, u, out);
		n->stats.unwound++;
		if (p->used > n->stats.stack_used)
			n->stats.stack_used = p->used;
		/* naming may have loaded a debug file */
		if (t0 - p->charged_ns >= CHARGE_NS)
			charge(n, p, t0);
	} else {
		n->stats.incomplete++;
		Dwfl_Module *mod = p->npcs ? dwfl_addrmodule(p->dwfl, p->pcs[p->npcs - 1]) : NULL;

		pw_debug("native: %d/%d: unwind stopped after %u frames at 0x%llx (%s): %s\n",
			 (int)h->pid, (int)h->tid, p->npcs,
			 p->npcs ? (unsigned long long)p->pcs[p->npcs - 1] : 0ull,
			 mod ? dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
			     : "no module",
			 p->read_failed ? "needed memory outside the stack copy (--native-stack)"
			 : rc < 0	? dwfl_errmsg(-1)
					: "too deep");
	}
	n->stats.unwind_ns += now_ns() - t0;
}
