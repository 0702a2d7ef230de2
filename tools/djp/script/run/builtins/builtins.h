/*
 * The built-in functions' table (builtins.def has the rows): what check.c
 * resolves a call by, and what the interpreter calls.  Each builtins/ file
 * holds the functions of one family; they read the run through
 * run/interp.h.
 */
#ifndef DJP_SCRIPT_BUILTINS_H
#define DJP_SCRIPT_BUILTINS_H

#include <stdint.h>
#include <stdio.h>

struct node;
struct run;

/* The ids, B_PID.. in the rows' order: a resolved call's node->op. */
enum builtin {
#define BUILTIN(id, name, ret, min, a1, a2, a3, flags, fn) B_##id,
#define ALIAS(id, name)
#include "builtins.def"
#undef BUILTIN
#undef ALIAS
	B_COUNT
};

/* What the checker must know of a call beyond its types. */
enum {
	BF_CPU = 1 << 0,    /* reads the hit's CPU: events must carry it */
	BF_USTR = 1 << 1,   /* a string at the address of argument 1, copied at the hit when that is $argN */
	BF_USTR_N = 1 << 2, /* ... at most argument 2's bytes */
	BF_USTACK = 1 << 3, /* reads the hit's user stack: its hits record it */
	BF_REGS = 1 << 4,   /* reads the hit's registers: the events carry them (dwarfless.c) */
};

typedef int64_t builtin_num(struct run *r, struct node *n);
typedef const char *builtin_str(struct run *r, struct node *n);

struct builtin_def {
	const char *name;
	uint8_t ret;		 /* TY_LONG or TY_STR */
	uint8_t min_args, max_args;
	uint8_t arg[3];		 /* their types */
	unsigned flags;		 /* BF_* */
	builtin_num *num;	 /* the function: of a TY_LONG result ... */
	builtin_str *str;	 /* ... or of a TY_STR one */
};

/* indexed by enum builtin */
extern const struct builtin_def builtins[B_COUNT];

/* The id of the built-in function name called with nargs arguments, or -1:
 * then *named is the row of that name, when there is one (of other
 * arities), else NULL. */
int builtin_find(const char *name, int nargs, const struct builtin_def **named);

/* --dump-functions: the built-in functions, as stap lists its tapset's */
void dump_functions(FILE *out);

#define BUILTIN_PROTO_LONG(fn) builtin_num fn
#define BUILTIN_PROTO_STR(fn) builtin_str fn
#define BUILTIN(id, name, ret, min, a1, a2, a3, flags, fn) BUILTIN_PROTO_##ret(fn);
#define ALIAS(id, name)
#include "builtins.def"
#undef BUILTIN
#undef ALIAS
#undef BUILTIN_PROTO_LONG
#undef BUILTIN_PROTO_STR

#endif
