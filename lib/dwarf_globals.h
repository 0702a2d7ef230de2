/*
 * A program's global and file-static variables from its DWARF
 * (lib/dwarf_globals.c): where one is and how to read it, for a script's
 * @var("name@file.c").
 */
#ifndef DJP_LIB_DWARF_GLOBALS_H
#define DJP_LIB_DWARF_GLOBALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct djp_global {
	uint64_t addr;	/* link-time address */
	unsigned size;	/* 1, 2, 4 or 8 bytes */
	bool is_signed; /* a signed integer (else unsigned, or a pointer) */
	char type[128]; /* its C type, as -L spells it */
};

/* Variable `name` of the object at `path`, defined at the top of a unit
 * whose name ends with `file` (path component by component; NULL or "":
 * any unit), an integer, enum, bool or pointer at a fixed address.  0 and
 * *out; -ENOENT, -ENOTSUP (another type, or no fixed address), -ENODATA
 * (no DWARF) or -errno, with one line in err. */
int djp_global_find(const char *path, const char *name, const char *file, struct djp_global *out, char *err,
		    size_t errsz);

/* The DIE of that variable in dw, of any type, and its link-time
 * address: a typed access's start (@var("name")->member). */
struct Dwarf;
bool djp_global_die(struct Dwarf *dw, const char *name, const char *file, void *die_out, uint64_t *addr);

#endif
