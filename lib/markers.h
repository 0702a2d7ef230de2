/*
 * The marker reader: every marker of an ELF file, from its `.markers`
 * section (docs/ABI.md) or, for objects that have none, from its
 * `.note.stapsdt` SDT notes.  Used by the tool (`djp list`) and by the engine
 * (which reads the file of each loaded object and adds the load bias).
 */
#ifndef DJP_LIB_MARKERS_H
#define DJP_LIB_MARKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "argloc.h"

#define DJP_MARKER_MAX_ARGS 12

struct djp_marker_info {
	uint64_t site;	    /* link-time virtual address of the site */
	uint8_t site_len;   /* 6 for a .markers site, 1 for an SDT-only probe */
	uint8_t nargs;
	bool from_sdt;	    /* read from a .note.stapsdt note, not .markers */
	const char *provider; /* SDT provider, or NULL for .markers records */
	const char *name;
	const char *format; /* "" when the marker has none */
	const char *args;   /* the raw argument-location string */
	struct djp_argloc arg[DJP_MARKER_MAX_ARGS];
	uint64_t semaphore; /* SDT semaphore link-time address, or 0 */
	const char *function; /* enclosing function, or NULL */
	const char *file;     /* source file from DWARF, or NULL */
	unsigned line;	      /* 0 when unknown */
	uint64_t sdt_base;    /* SDT: the note's _.stapsdt.base (prelink check) */
	/* %rsp modulo 16 at the site, from the call-frame information, or -1
	 * where that does not say (lib/markers_elf.c) */
	int8_t sp_align;
	/* A relocatable object (ET_REL, a kernel module): the section the
	 * site lies in, `site` being its offset there; NULL otherwise */
	const char *section;
	/* A function's entry (an instruction probe, kernel/points.c): its
	 * return value's size (0: unknown, or not one integer in %rax), sign
	 * and conversion ('d', 'u', 'p'), for the return site's format */
	uint8_t ret_size;
	bool ret_signed;
	char ret_conv;
};

struct djp_marker_list {
	size_t count;
	struct djp_marker_info *v;
	bool is_dyn;	/* ET_DYN (PIE or shared object): addresses need a bias */
	bool is_rel;	/* ET_REL (an object file, a .ko): sites are section offsets */
	void *priv;	/* string storage owned by the list */
};

enum {
	DJP_READ_NO_DWARF = 1u << 0, /* skip function and file:line lookup */
	DJP_READ_NO_SDT = 1u << 1,   /* ignore .note.stapsdt */
};

/*
 * Read every marker of `path`.  On success returns 0 and *out (count may be
 * 0).  On failure returns -errno and writes one line, "PATH: problem", into
 * err (no trailing newline); *out is NULL and nothing is allocated.
 */
int djp_markers_read_file(const char *path, unsigned flags, struct djp_marker_list **out, char *err, size_t errsz);

/*
 * Parse the raw bytes of a `.markers` section loaded at link-time address
 * `vaddr` (used by the file reader, the engine and the fuzz target).  Same
 * return conventions; `what` names the object in error messages.
 */
int djp_markers_parse_section(const void *data, size_t size, uint64_t vaddr, const char *what,
			      struct djp_marker_list **out, char *err, size_t errsz);

/* Parse the raw bytes of a `.note.stapsdt` section (SHT_NOTE contents). */
int djp_markers_parse_sdt_notes(const void *data, size_t size, const char *what, struct djp_marker_list **out,
				char *err, size_t errsz);

void djp_marker_list_free(struct djp_marker_list *list);

/* How many of the list's markers are the program's, not the library's own
 * (lib/marker_match.h's reserved names: a thread's begin and end); a
 * marker without a name counts as the program's. */
size_t djp_marker_list_programs(const struct djp_marker_list *list);

/*
 * The load bias of an object whose file offset `map_offset` is mapped at
 * `map_start` (a line of /proc/PID/maps): runtime address = link-time
 * address + bias.  Uses the PT_LOAD segments the reader kept from the file.
 * Returns 0, or -ENOENT when no segment covers that offset.
 */
int djp_marker_list_bias(const struct djp_marker_list *list, uint64_t map_start, uint64_t map_offset,
			 uint64_t *bias);

/* The link-time address of file offset file_off, and the file offset of
 * link-time address vaddr, by the PT_LOAD segments' bytes in the file
 * (the kernel's uprobes name an instruction and an SDT semaphore by their
 * offsets).  0, or -ENOENT when no segment's file bytes hold it. */
int djp_marker_list_vaddr_of(const struct djp_marker_list *list, uint64_t file_off, uint64_t *vaddr);
int djp_marker_list_file_offset(const struct djp_marker_list *list, uint64_t vaddr, uint64_t *file_off);

/* ---- internal to the reader (markers_parse.c, markers_elf.c) ----------- */

/* Same as the parsers above, resolving sym(%rip) arguments with `lookup`. */
int djp_markers_parse_section_sym(const void *data, size_t size, uint64_t vaddr, const char *what,
				  djp_sym_lookup_fn lookup, void *ctx, struct djp_marker_list **out, char *err,
				  size_t errsz);
int djp_markers_parse_sdt_notes_sym(const void *data, size_t size, const char *what, djp_sym_lookup_fn lookup,
				    void *ctx, struct djp_marker_list **out, char *err, size_t errsz);

/* An empty list, and a new zeroed record at its end (sp_align -1): the
 * engine's instruction probes describe their points this way. */
struct djp_marker_list *djp_marker_list_new(void);
struct djp_marker_info *djp_marker_list_push(struct djp_marker_list *l);
/* A copy of n bytes of s, NUL-terminated, owned by the list; NULL on ENOMEM. */
const char *djp_marker_list_strdup(struct djp_marker_list *list, const char *s, size_t n);

/* Keep a PT_LOAD segment for djp_marker_list_bias(); -ENOMEM on failure. */
int djp_marker_list_add_segment(struct djp_marker_list *list, uint64_t vaddr, uint64_t offset, uint64_t filesz);

#endif
