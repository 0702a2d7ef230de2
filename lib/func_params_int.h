/*
 * What the files of the parameter reader share (lib/func_index.c,
 * lib/func_params.c, lib/param_locs.c): the open object and its DWARF, one
 * parameter while it is worked out, and the steps each file does for the
 * others.  Not installed.
 */
#ifndef DJP_LIB_FUNC_PARAMS_INT_H
#define DJP_LIB_FUNC_PARAMS_INT_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/arch.h"
#include "lib/dwarf_types.h"
#include "lib/func_params.h"

/* A function of a unit: its entry address and its DIE's offset. */
struct fn_entry {
	uint64_t addr;
	Dwarf_Off off;
};

/* The functions of one unit, sorted by address. */
struct cu_index {
	Dwarf_Off cu;
	struct fn_entry *v;
	size_t n;
};

/* One DWARF: the object's own or its separate debug file's, with the
 * index of every unit asked for so far, sorted by unit offset. */
struct dwarf_src {
	Dwarf *dw;
	struct cu_index *cus;
	size_t ncus, cap;
};

/* An open object: its file, its DWARF and its debug file's, their
 * indexes, and its .eh_frame, each opened when first needed. */
struct djp_params_file {
	char *path;
	int fd, dbg_fd;
	Elf *elf, *dbg_elf;
	struct dwarf_src own, dbg;
	bool dbg_looked, eh_looked;
	Dwarf_CFI *eh_frame; /* the object's .eh_frame */
};

/* The object's separate debug file's DWARF, looked for at the first
 * call; NULL when it has none (lib/func_index.c). */
Dwarf *djp_params_debug_dwarf(struct djp_params_file *pf);

/* The subprogram at addr, in the object's DWARF, else in its debug
 * file's; *src is the DWARF it was found in.  0, or -errno with one line
 * in err (lib/func_index.c). */
int djp_params_find(struct djp_params_file *pf, uint64_t addr, Dwarf_Die *sub, struct dwarf_src **src, char *err,
		    size_t errsz);

/* One parameter while it is worked out. */
struct pwork {
	Dwarf_Die decl; /* its formal_parameter in the declaration */
	Dwarf_Die conc; /* the concrete copy's, for the location */
	bool has_conc, has_type;
	bool is_local; /* a variable of a block around the address, not a parameter */
	Dwarf_Die type;
	struct djp_tinfo ti;
	const char *name; /* libdw's, or argN in `unnamed` */
	char unnamed[16];
	char type_name[DJP_TYPE_MAX];
	struct djp_argloc loc;
	const char *why;
	struct arch_agg_loc agg;
};

/* What a lookup of DWARF locations needs. */
struct djp_loc_ctx {
	struct djp_params_file *pf;
	struct dwarf_src *src;
	Dwarf_Die *sub; /* the concrete subprogram: its frame base */
	uint64_t func_addr, pc;
};

/* lib/param_locs.c: unavailable, for a static reason; a location of
 * kind `kind` with the value's size and signedness; DW_AT_const_value's
 * constant; the DWARF location of w at c->pc. */
void djp_param_none(struct pwork *w, const char *why);
void djp_param_loc(struct pwork *w, unsigned kind, int reg, int64_t disp);
void djp_param_const_value(struct pwork *w, Dwarf_Attribute *a);
void djp_param_dwarf_location(struct djp_loc_ctx *c, struct pwork *w);

#endif
