// SPDX-License-Identifier: MIT
/* Function symbols and stapsdt notes with libelf, for trace's uprobes and USDT probes. */
#include <errno.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/elfprobe.h"
#include "lib/util.h"

static Elf *open_elf(int fd)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

static bool is_func(const GElf_Sym *sym)
{
	return GELF_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_shndx != SHN_UNDEF &&
	       sym->st_value;
}

/* The file offset of virtual address `vaddr`: in the PT_LOAD holding it. */
static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t nphdr;

	if (elf_getphdrnum(elf, &nphdr))
		return -ENOEXEC;
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*offset = ph.p_offset + (vaddr - ph.p_vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

/* Visit the symbols of both tables; `fn` returns nonzero to stop. */
static int each_func(Elf *elf, int (*fn)(void *ctx, const char *name, const GElf_Sym *sym),
		     void *ctx)
{
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			Elf_Data *data;
			GElf_Shdr sh;
			size_t n;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
				continue;
			data = elf_getdata(scn, NULL);
			if (!data)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 0; i < n; i++) {
				GElf_Sym sym;
				const char *name;
				int r;

				if (!gelf_getsym(data, (int)i, &sym) || !is_func(&sym))
					continue;
				name = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (name && *name && (r = fn(ctx, name, &sym)))
					return r;
			}
		}
	}
	return 0;
}

struct find {
	const char *name;
	uint64_t vaddr;
};

static int find_one(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct find *f = ctx;

	if (strcmp(name, f->name))
		return 0;
	f->vaddr = sym->st_value;
	return 1;
}

int elfprobe_func_offset(int fd, const char *name, uint64_t *offset)
{
	struct find f = { .name = name };
	Elf *elf = open_elf(fd);
	int err;

	if (!elf)
		return -ENOEXEC;
	err = each_func(elf, find_one, &f) ? vaddr_to_offset(elf, f.vaddr, offset) : -ENOENT;
	elf_end(elf);
	return err;
}

/* Names collected, then listed sorted and each once (a name is often in both tables, a
 * USDT probe at several sites). */
struct names {
	char **v;
	size_t n, cap;
	const char *pattern;
};

static int names_add(struct names *l, const char *a, const char *b)
{
	size_t len = strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
	char *s;

	if (grow_array((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
		return -ENOMEM;
	s = malloc(len);
	if (!s)
		return -ENOMEM;
	if (b)
		snprintf(s, len, "%s:%s", a, b);
	else
		memcpy(s, a, len);
	l->v[l->n++] = s;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_emit_free(struct names *l, void (*fn)(void *ctx, const char *name), void *ctx)
{
	if (l->n) /* qsort takes no NULL array, even empty */
		qsort(l->v, l->n, sizeof(*l->v), cmp_str);
	for (size_t i = 0; i < l->n; i++) {
		if (fn && (!i || strcmp(l->v[i], l->v[i - 1])))
			fn(ctx, l->v[i]);
	}
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int list_one(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct names *l = ctx;

	(void)sym;
	if (fnmatch(l->pattern, name, 0))
		return 0;
	return names_add(l, name, NULL);
}

int elfprobe_list_funcs(int fd, const char *pattern, void (*fn)(void *ctx, const char *name),
			void *ctx)
{
	struct names l = { .pattern = pattern };
	Elf *elf = open_elf(fd);
	int err;

	if (!elf)
		return -ENOEXEC;
	err = each_func(elf, list_one, &l);
	elf_end(elf);
	names_emit_free(&l, err < 0 ? NULL : fn, ctx);
	return err < 0 ? err : 0;
}

/* stapsdt note descriptor: three addresses (the probe, the base .stapsdt.base address,
 * the semaphore), then "provider\0name\0args\0". */
#define STAPSDT_NOTE_TYPE 3

int elfprobe_list_usdt(int fd, void (*fn)(void *ctx, const char *probe), void *ctx)
{
	struct names l = { 0 };
	Elf *elf = open_elf(fd);
	Elf_Scn *scn = NULL;
	int err = 0;

	if (!elf)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off, next;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		while (!err && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const char *desc = (const char *)data->d_buf + desc_off;
			const char *provider, *pname, *end = desc + nh.n_descsz;

			off = next;
			if (nh.n_type != STAPSDT_NOTE_TYPE || nh.n_namesz != 8 ||
			    memcmp((const char *)data->d_buf + name_off, "stapsdt", 8) ||
			    nh.n_descsz < 3 * 8 + 2)
				continue;
			provider = desc + 3 * 8;
			pname = memchr(provider, 0, end - provider);
			if (!pname || ++pname >= end || !memchr(pname, 0, end - pname))
				continue;
			err = names_add(&l, provider, pname);
		}
	}
	elf_end(elf);
	names_emit_free(&l, err ? NULL : fn, ctx);
	return err;
}
