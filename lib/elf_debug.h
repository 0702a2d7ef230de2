/*
 * Finding an object's separate debug file, and the unit of its DWARF
 * that holds an address (elf_debug.c): what the marker reader, the
 * function-symbol reader and the parameter reader all need.
 */
#ifndef DJP_LIB_ELF_DEBUG_H
#define DJP_LIB_ELF_DEBUG_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The build-id of an ELF file: its bytes in *id, their number; 0: none. */
size_t djp_elf_build_id(Elf *elf, const void **id);
/*
 * The places the separate debug file of `path` (open as elf) may be, in
 * gdb's order: /usr/lib/debug/.build-id/xx/yyyy.debug, then the
 * .gnu_debuglink name next to it, in .debug/ beside it and under
 * /usr/lib/debug.  `try` opens one and checks it against the build-id
 * (id, n): true keeps it and ends the search.  False when there is no
 * build-id to check against, or no candidate was kept.
 */
bool djp_elf_debug_file(Elf *elf, size_t shstrndx, const char *path,
			bool (*try)(void *ctx, const char *cand, const void *id, size_t n), void *ctx);

/* Open the x86-64 ELF file at `path` to read (non-blocking: a FIFO would
 * block the open until a writer came): 0 with *fd, *elf and, when st is
 * not NULL, its fstat; or -errno with one line "PATH: problem" in err
 * (may be NULL), nothing left open.  The one opener of the readers. */
struct stat;
int djp_elf_open(const char *path, int *fd, Elf **elf, struct stat *st, char *err, size_t errsz);

/* The compilation unit of dw holding link-time address addr: true and
 * *cudie.  dwarf_addrdie() needs .debug_aranges, which clang does not
 * emit by default; then each unit's ranges are asked. */
bool djp_dwarf_cu_at(Dwarf *dw, uint64_t addr, Dwarf_Die *cudie);

#endif
