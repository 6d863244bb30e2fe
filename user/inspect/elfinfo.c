// SPDX-License-Identifier: MIT
/* Symbol and section lookups with libelf. Files are untrusted: every index and size that
 * comes from the file is checked before use. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "inspect/elfinfo.h"

/* Read the 8-byte object at `vaddr` from the file image (Py_Version is a const in .rodata). */
static int read_u64_at_vaddr(Elf *elf, uint64_t vaddr, uint64_t *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		uint64_t off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		/* written so that no sum can wrap: vaddr and the sizes come from the file */
		if (vaddr < sh.sh_addr || sh.sh_size < 8 || vaddr - sh.sh_addr > sh.sh_size - 8)
			continue;
		data = elf_getdata(scn, NULL);
		off = vaddr - sh.sh_addr;
		if (!data || !data->d_buf || data->d_size < 8 || off > data->d_size - 8)
			return -ENOENT;
		memcpy(out, (char *)data->d_buf + off, 8);
		return 0;
	}
	return -ENOENT;
}

static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_pyinfo *out,
			 uint64_t *version_vaddr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		if (!out->runtime_vaddr && !strcmp(name, "_PyRuntime"))
			out->runtime_vaddr = sym.st_value;
		else if (!*version_vaddr && !strcmp(name, "Py_Version"))
			*version_vaddr = sym.st_value;
		else if (!out->code_type_vaddr && !strcmp(name, "PyCode_Type"))
			out->code_type_vaddr = sym.st_value;
		else if (!out->str_type_vaddr && !strcmp(name, "PyUnicode_Type"))
			out->str_type_vaddr = sym.st_value;
		else if (!out->long_type_vaddr && !strcmp(name, "PyLong_Type"))
			out->long_type_vaddr = sym.st_value;
	}
}

static bool links_libpython(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return false;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Dyn dyn;
		const char *name;

		if (!gelf_getdyn(data, (int)i, &dyn))
			break;
		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_NEEDED)
			continue;
		name = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
		if (name && !strncmp(name, "libpython", 9))
			return true;
	}
	return false;
}

/* `fd` opened as an ELF image: its section-name table, whether it is ET_DYN and its first
 * PT_LOAD's page-aligned address. 0 with *elf to elf_end(), or an error with nothing held. */
static int elf_open_image(int fd, Elf **elf, size_t *shstrndx, size_t *nphdr, bool *is_dyn,
			  uint64_t *first_load_vaddr)
{
	GElf_Ehdr eh;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	*elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elf)
		return -ENOEXEC;
	if (elf_kind(*elf) != ELF_K_ELF || !gelf_getehdr(*elf, &eh) ||
	    elf_getshdrstrndx(*elf, shstrndx) || elf_getphdrnum(*elf, nphdr)) {
		elf_end(*elf);
		return -ENOEXEC;
	}
	*is_dyn = eh.e_type == ET_DYN;
	for (size_t i = 0; i < *nphdr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(*elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			*first_load_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			break;
		}
	}
	return 0;
}

int elf_read_pyinfo(int fd, struct elf_pyinfo *out)
{
	uint64_t version_vaddr = 0, section_vaddr = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx, nphdr;
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	err = elf_open_image(fd, &elf, &shstrndx, &nphdr, &out->is_dyn, &out->first_load_vaddr);
	if (err)
		return err;
	err = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) {
			scan_symbols(elf, scn, &sh, out, &version_vaddr);
			continue;
		}
		if (sh.sh_type == SHT_DYNAMIC) {
			out->needs_libpython = links_libpython(elf, scn, &sh);
			continue;
		}
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		/* _PyRuntime sits alone in its own section in every build 3.10-3.15 */
		if (name && !strcmp(name, ".PyRuntime")) {
			section_vaddr = sh.sh_addr;
			out->has_runtime_section = true;
		}
	}
	if (!out->runtime_vaddr)
		out->runtime_vaddr = section_vaddr;
	for (size_t i = 0; i < nphdr && out->runtime_vaddr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    out->runtime_vaddr >= ph.p_vaddr &&
		    out->runtime_vaddr - ph.p_vaddr < ph.p_filesz) {
			out->runtime_offset = ph.p_offset + (out->runtime_vaddr - ph.p_vaddr);
			out->runtime_in_file = true;
			break;
		}
	}
	if (version_vaddr && read_u64_at_vaddr(elf, version_vaddr, &out->py_version))
		out->py_version = 0;
	elf_end(elf);
	return err;
}

int elf_find_section(int fd, const char *name, struct elf_section *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, nphdr;
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	err = elf_open_image(fd, &elf, &shstrndx, &nphdr, &out->is_dyn, &out->first_load_vaddr);
	if (err)
		return err;
	err = -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sname && !strcmp(sname, name)) {
			out->vaddr = sh.sh_addr;
			out->size = sh.sh_size;
			err = 0;
			break;
		}
	}
	elf_end(elf);
	return err;
}
