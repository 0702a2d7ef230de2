/*
 * A kernel function's parameters by name from the running kernel's DWARF
 * (kfunc_dwarf.c has the essay): for kernel.function("NAME")'s `$name`
 * and the fields of `djp trace -k func:NAME`.
 */
#ifndef DJP_TOOLS_KFUNC_DWARF_H
#define DJP_TOOLS_KFUNC_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KFUNC_MAX_ARGS 6 /* the integer argument registers kmod/kfunc.c records */

struct kfunc_arg {
	char name[48];	  /* "" when the DWARF has none */
	uint8_t size;	  /* bytes of the value in its register: 1, 2, 4 or 8 */
	bool is_signed;
	const char *conv; /* how a field of it prints: "%d", "%lu", "%#lx"... */
};

struct kfunc_sig {
	unsigned nargs;	/* the registers up to the last that holds a parameter */
	struct kfunc_arg arg[KFUNC_MAX_ARGS]; /* register i's (%rdi %rsi ...); name "": none's */
	bool has_ret;	/* an integer or pointer return value */
	struct kfunc_arg ret;
};

/* The parameters of function NAME of MODULE (NULL: the image or any
 * loaded module).  0, or -errno with *why saying what is missing; the
 * answer is kept, and asked again costs nothing. */
int kfunc_params(const char *module, const char *name, const struct kfunc_sig **sig, const char **why);

/* The parameters of function NAME in the ELF file FILE (an image, a .ko,
 * any relocatable object with DWARF): 0, or -errno with why filled. */
int kfunc_file_params(const char *file, const char *name, struct kfunc_sig *sig, char *why, size_t whysz);

/* The same for a function point's name as djprobe.ko lists it:
 * "func:[MODULE:]NAME[+0]" or with "%return" (*ret then). */
int kfunc_point_params(const char *point, const struct kfunc_sig **sig, bool *ret, const char **why);

/* A parameter's value from its register: cut to its size, extended by its
 * sign. */
int64_t kfunc_arg_value(const struct kfunc_arg *a, uint64_t reg);

/* The event format of the entry ("fd=%d buf=%#lx ...") or of the return
 * ("return=%ld"): its length, or -1 (no return value; too long for sz). */
int kfunc_format(const struct kfunc_sig *sig, bool ret, char *buf, size_t sz);

#endif
