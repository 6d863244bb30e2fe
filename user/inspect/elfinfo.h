/* SPDX-License-Identifier: MIT */
/* libelf: find what pywalk needs in a binary (_PyRuntime, Py_Version) without running it. */
#ifndef PW_ELFINFO_H
#define PW_ELFINFO_H

#include <stdbool.h>
#include <stdint.h>

struct elf_pyinfo {
	uint64_t runtime_vaddr;	   /* _PyRuntime (symbol, else the .PyRuntime section); 0 = none */
	uint64_t py_version;	   /* value of the Py_Version constant (3.11+), 0 = not found */
	uint64_t code_type_vaddr;  /* PyCode_Type, 0 = not found */
	uint64_t str_type_vaddr;   /* PyUnicode_Type, 0 = not found */
	uint64_t long_type_vaddr;  /* PyLong_Type, 0 = not found */
	uint64_t first_load_vaddr; /* p_vaddr of the first PT_LOAD, page-aligned down */
	uint64_t runtime_offset;   /* file offset of runtime_vaddr's bytes (valid when
				    * runtime_in_file): where a complete mapping shows them */
	bool runtime_in_file;	   /* runtime_vaddr lies in a PT_LOAD's file-backed part */
	bool is_dyn;		   /* ET_DYN (PIE or shared library) */
	bool has_runtime_section;  /* a .PyRuntime section exists (CPython 3.10+) */
	bool needs_libpython;	   /* a DT_NEEDED entry names a libpython (a scheduling hint for
				    * discovery only: versions are never taken from names) */
};

/* Inspect the ELF file open on `fd`. Returns 0 (runtime_vaddr may be 0: not Python),
 * -ENOEXEC when it is not an ELF file, or another negative errno. */
int elf_read_pyinfo(int fd, struct elf_pyinfo *out);

/* Where a named section is loaded, for a table the target's code keeps in it (3.14's
 * .AsyncioDebug). */
struct elf_section {
	uint64_t vaddr, size;
	uint64_t first_load_vaddr; /* as elf_pyinfo's: what the load bias is taken from */
	bool is_dyn;
};

/* Find section `name` in the ELF file open on `fd`. 0, -ENOENT when it has none (or it is
 * not allocated), -ENOEXEC when the file is not ELF. */
int elf_find_section(int fd, const char *name, struct elf_section *out);

#endif
