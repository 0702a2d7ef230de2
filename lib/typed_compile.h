/*
 * A script's typed access compiled from DWARF into a load program
 * (lib/typed_compile.c has the essay; lib/load_prog.h the program).
 */
#ifndef DJP_LIB_TYPED_COMPILE_H
#define DJP_LIB_TYPED_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/func_params.h"
#include "lib/dwarf_types.h"
#include "lib/load_prog.h"

#define DJP_TYPED_MAX_STEPS 16

/* One step of an access after the variable: `->member` (stap's `->`,
 * on a pointer or a structure alike) or `[index]`. */
struct djp_typed_step {
	bool is_index;
	const char *member;
	int64_t index;
	/* [$i]: the index is this context variable's value at the hit (a
	 * parameter or local of the function, read where its DWARF says) */
	const char *index_var;
};

struct djp_typed_access {
	const char *var; /* the parameter's name, or "return" with at_return */
	bool at_return;	 /* $return at the function's return */
	bool addr_of;	 /* &...: the address, not the value */
	/* @cast($var, "struct T"[, "PATH"]): $var's value is the address of
	 * a T, the type named in the DWARF of the function's object (or of
	 * PATH when cast_path is not NULL) */
	const char *cast_type, *cast_path;
	/* An address that is not a variable of the function's DWARF: where
	 * base_loc says, typed by @cast only, whether or not the function
	 * has DWARF; var is then as written, for messages.  A register at
	 * the probed instruction, by the ABI (@cast(pointer_arg(n), ...),
	 * @cast(register("rdi"), ...)), or a marker's own argument
	 * (DJP_LOC_ARG: @cast($arg1, ...) at a marker). */
	bool has_base_loc;
	struct djp_argloc base_loc;
	/* @var("name@file")->...: the global or file-static `name` of the
	 * function's object (at the top of a unit whose name ends with
	 * global_file, NULL: any), where var is @var(...) as written */
	const char *global_name, *global_file;
	/* a statement point's link-time address inside the function: the
	 * variable is a parameter or a local in scope there, where its DWARF
	 * location says; 0: the function's entry */
	uint64_t pc;
	unsigned nsteps;
	struct djp_typed_step step[DJP_TYPED_MAX_STEPS];
};

/* What the value is, for the script and its printing. */
struct djp_typed_result {
	struct djp_load_prog prog;
	char type[DJP_TYPE_MAX]; /* the C type of the result, as -L spells it */
	char conv;		 /* 'd' signed, 'u' unsigned, 'p' a pointer or an address */
};

/* One value of a pretty-printed access ($p$, $p$$, $p->m$), with the
 * text printed before it. */
struct djp_pretty_piece {
	char *text;
	/* 'd' signed, 'u' unsigned, 'x' hex (a pointer), 's' a string
	 * (quoted; prog.str_bound set), 'e' an enum (its names) */
	char kind;
	struct djp_load_prog prog;
	unsigned nenum;
	int64_t *enum_val;
	char **enum_name;
	/* the value it is part of ($$parms$'s parameter: stap prints
	 * "ERROR" for one that faulted, the others as they are); on the
	 * first piece of a group, the text's first close_len bytes end the
	 * group before and the next prefix_len bytes ("name=") are the
	 * group's own.  0, 0, 0 for the pieces of one $var$ */
	uint16_t group;
	uint16_t close_len, prefix_len;
};

struct djp_pretty {
	struct djp_pretty_piece *v;
	unsigned n;
	char *tail; /* after the last value */
	size_t tail_close; /* its first bytes that end the last piece's group */
};

/* a, pretty-printed as stap prints $var$ (level 1: nested structures as
 * {...}) or $var$$ (level 2: expanded): `{.a=1, .b=0x7f..., .s="text",
 * .in={...}, .arr=[1, 2, 3, 4]}`, a pointer to a structure printed as the
 * structure, char arrays and char * as quoted strings, enums by name.
 * 0 and *out (djp_pretty_free), or -errno with one line in err. */
int djp_typed_pretty(struct djp_params_file *pf, uint64_t func_addr, const struct djp_typed_access *a, unsigned level,
		     struct djp_pretty *out, char *err, size_t errsz);
void djp_pretty_free(struct djp_pretty *p);

/* Compile access a at the entry (or, at_return, the return) of the
 * function whose entry is at link-time address func_addr in pf.  0 and
 * *out, or -errno with one line in err that names what is wrong: no such
 * parameter, no member of that name (with the type's members), not a
 * pointer or a structure, a value that is not a scalar. */
int djp_typed_compile(struct djp_params_file *pf, uint64_t func_addr, const struct djp_typed_access *a,
		      struct djp_typed_result *out, char *err, size_t errsz);

#endif
