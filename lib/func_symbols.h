/*
 * The functions of an ELF object, for probing functions by name, address
 * and source line (lib/func_symbols.c): its function symbols, sorted by
 * address, and its DWARF line tables.
 */
#ifndef DJP_LIB_FUNC_SYMBOLS_H
#define DJP_LIB_FUNC_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct djp_func {
	const char *name;   /* symbol name (owned by the table) */
	uint64_t addr;      /* link-time address (st_value) */
	uint64_t size;      /* st_size; 0 when the symbol has none */
	bool global;        /* STB_GLOBAL/WEAK (false: local) */
};

struct djp_func_table {
	size_t count;
	struct djp_func *v; /* sorted by addr, one entry per address (prefer a global name over a local
			     * alias, and .symtab over .dynsym when both name it) */
	bool is_dyn;        /* ET_DYN: runtime = addr + load bias */
	uint64_t entry;     /* e_entry: where the process (or the loader) starts */
	void *priv;
};

/* Every STT_FUNC (and STT_GNU_IFUNC) symbol with a non-zero address, from
 * .symtab (the file's own, else its separate debug file's), and .dynsym (a
 * stripped library still has its exports); 0 and *out, or -errno with one
 * line in err.  Also reads the PT_LOAD segments, for djp_funcs_file_offset. */
int djp_funcs_read(const char *path, struct djp_func_table **out, char *err, size_t errsz);
void djp_funcs_free(struct djp_func_table *t);
/* The functions' link-time addresses, sorted (t->count of them, malloc'd;
 * NULL for none or no memory): where each one's code starts, for a walk
 * over the object's code (arch/x86's djp_branch_targets_of_file). */
uint64_t *djp_funcs_starts(const struct djp_func_table *t);

/* The function containing link-time address `addr` (addr in [a, a+size), or
 * the nearest symbol below when it has size 0), or NULL. */
const struct djp_func *djp_funcs_at(const struct djp_func_table *t, uint64_t addr);

/* The functions that cover link-time address `addr` ([a, a + size)
 * holds it: a symbol may start inside another function, as hand-written
 * assembly's do), one at a time from the one that starts nearest below
 * it: the first with after NULL, the next with after the last returned;
 * NULL when there is no other. */
const struct djp_func *djp_funcs_covering(const struct djp_func_table *t, uint64_t addr, const struct djp_func *after);

/* Visit every function whose name matches the fnmatch(3) glob (exact name
 * when no glob chars), in address order; returns how many matched.  fn may
 * be NULL (count only); it may stop the walk by returning non-zero: a
 * negative value is then returned as-is, a positive one ends the walk and
 * the count so far (this one included) is returned. */
int djp_funcs_match(const struct djp_func_table *t, const char *glob,
		    int (*fn)(void *ctx, const struct djp_func *f), void *ctx);

/* The file offset of link-time address `addr` from the PT_LOAD segments:
 * 0 and *off, or -ENOENT when no segment holds it in the file. */
int djp_funcs_file_offset(const struct djp_func_table *t, uint64_t addr, uint64_t *off);
/* The reverse: the link-time address at file offset `off` (a mapping's
 * offset, from /proc/PID/maps), or -ENOENT. */
int djp_funcs_vaddr_of(const struct djp_func_table *t, uint64_t off, uint64_t *addr);
/* The executable PT_LOAD segment that holds link-time address `addr`: its
 * link-time start and size in memory and its file offset, page-aligned as
 * the loader maps it (page: the page size); 0, or -ENOENT. */
int djp_funcs_code_segment(const struct djp_func_table *t, uint64_t addr, uint64_t page, uint64_t *start,
			   uint64_t *size, uint64_t *off);

/* Source line to link-time addresses, from the DWARF line tables.  `spec`
 * is "FILE:LINE"; FILE matches the end of a line-table file name component
 * by component ("foo.c" matches "/src/foo.c", not "/src/xfoo.c"; an
 * absolute FILE must match the whole name).  Writes the addresses of the
 * line's is_stmt rows, one per distinct address, lowest first, to
 * addrs[0..max) and returns how many it wrote (at most max).  -ENOENT
 * "FILE:LINE: no code at that line" (never the next line instead);
 * -ENODATA "PATH: no debug information (line tables)"; -EINVAL for a spec
 * that is not FILE:LINE; other -errno from opening the file. */
int djp_lines_resolve(const char *path, const char *spec, uint64_t *addrs, size_t max, char *err, size_t errsz);

/* Does the file name `want` ("foo.c", "src/foo.c", "/abs/src/foo.c") name
 * `path`, component by component as djp_lines_resolve matches FILE? */
bool djp_path_names(const char *path, const char *want);

/* Where a function probe goes, as stap/gdb place one: the address after
 * the prologue of f.  The line-table row flagged prologue_end when there is
 * one (clang), else for unoptimized GCC code the row of the function's
 * second line; f->addr when unknown (optimized GCC code, no DWARF). */
uint64_t djp_func_after_prologue(const char *path, const struct djp_func *f);

/*
 * Where no symbol says (a static function of a stripped object), the
 * bounds of the code around link-time address `addr` from its call-frame
 * information (.eh_frame: one FDE a function, or a function's part):
 * 0 and *f (named "?"), or -ENOENT.
 */
int djp_func_from_cfi(const char *path, uint64_t addr, struct djp_func *f);
/* The function around link-time address `addr` of the object at `path`:
 * its symbol when one with a size holds it, else the call-frame
 * information's bounds, written to *cfi; NULL when neither says. */
const struct djp_func *djp_func_around(const struct djp_func_table *t, const char *path, uint64_t addr,
				       struct djp_func *cfi);

#endif
