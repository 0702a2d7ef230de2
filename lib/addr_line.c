/*
 * Code addresses to source lines, for usymfileline() and its kin.
 *
 * An address is looked up in the line table of the compile unit that
 * holds it: the unit from .debug_aranges (dwarf_addrdie), or, where an
 * object has none, from each unit's own ranges; then the row for the
 * address (dwarf_getsrc_die: the last row at or before it, which is the
 * "approximate" line stap speaks of).  The object's own DWARF is asked
 * first, then its separate debug file's (by build-id or .gnu_debuglink,
 * as lib/func_params.c finds it).  Objects stay open for the tool's life,
 * a few at a time: a script asks about the same few libraries over and
 * over, and each open costs a read of the file's DWARF headers.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/addr_line.h"
#include "lib/func_params.h"
#include "lib/func_params_int.h"

#define OPEN_MAX 8

static struct opened {
	char *path;
	struct djp_params_file *pf; /* NULL: no DWARF there */
	unsigned long used;
} opened[OPEN_MAX];
static unsigned long clock_;

static struct djp_params_file *open_cached(const char *path)
{
	struct opened *o = NULL, *oldest = &opened[0];
	char err[256];

	for (int i = 0; i < OPEN_MAX; i++) {
		if (opened[i].path && !strcmp(opened[i].path, path)) {
			opened[i].used = ++clock_;
			return opened[i].pf;
		}
		if (opened[i].used < oldest->used)
			oldest = &opened[i];
	}
	o = oldest;
	if (o->pf)
		djp_params_close(o->pf);
	free(o->path);
	*o = (struct opened){ strdup(path), NULL, ++clock_ };
	if (!o->path || djp_params_open(path, &o->pf, err, sizeof(err)))
		o->pf = NULL;
	return o->pf;
}

static bool unit_of(Dwarf *dw, uint64_t addr, Dwarf_Die *cu)
{
	Dwarf_CU *c = NULL;
	uint8_t type;

	if (dwarf_addrdie(dw, addr, cu))
		return true;
	while (dwarf_get_units(dw, c, &c, NULL, &type, cu, NULL) == 0)
		if ((type == DW_UT_compile || type == DW_UT_partial) && dwarf_haspc(cu, addr) > 0)
			return true;
	return false;
}

static int line_in(Dwarf *dw, uint64_t addr, char *file, size_t filesz, int *line)
{
	Dwarf_Attribute at;
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *src, *dir;

	if (!dw || !unit_of(dw, addr, &cu) || !(l = dwarf_getsrc_die(&cu, addr)) ||
	    !(src = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, line))
		return -ENOENT;
	/* a relative name under an absolute compilation directory is made
	 * whole; under a relative one (a distribution's build, its prefix
	 * mapped away: glibc's "./malloc") it is said as the table has it */
	dir = src[0] != '/' ? dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at)) : NULL;
	if (dir && dir[0] != '/')
		dir = NULL;
	snprintf(file, filesz, "%s%s%s", dir ? dir : "", dir ? "/" : "", src);
	return 0;
}

int djp_addr_line(const char *path, uint64_t addr, char *file, size_t filesz, int *line)
{
	struct djp_params_file *pf = open_cached(path);

	if (!pf)
		return -ENOENT;
	if (line_in(pf->own.dw, addr, file, filesz, line) == 0)
		return 0;
	return line_in(djp_params_debug_dwarf(pf), addr, file, filesz, line);
}
