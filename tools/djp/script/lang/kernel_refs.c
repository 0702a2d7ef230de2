/*
 * Context variables of kernel function points: `$fd` at
 * kernel.function("NAME") is the parameter of that name, found in the
 * kernel's DWARF (tools/djp/kfunc_dwarf.c) before anything is armed.
 *
 * The point's event carries the parameters in their registers, named as
 * the DWARF names them (the tool names the fields when djprobe.ko lists
 * the point), and $arg1..$arg6 by position as before; $return at a
 * return.  What cannot be read is said here, one error per variable, at
 * its line and column, instead of a probe that would never fire: a name
 * the function has no parameter of (its parameters listed), a kernel
 * without debug information (what to install, and $argN to use), a
 * parameter at a .return (read it at the entry), at a kernel.statement
 * inside the function (only the entry has them in their registers).
 * A variable only @defined() asks about is no read (check.c folds it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "tools/djp/kfunc_dwarf.h"

/* $argN, N 1..6: the registers, whatever the DWARF */
static bool by_position(const char *name)
{
	char *end;
	long n = !strncmp(name, "arg", 3) ? strtol(name + 3, &end, 10) : 0;
	return n >= 1 && n <= KFUNC_MAX_ARGS && !*end;
}

static int check_ref(struct script *sc, const struct probe_point *pp, const struct node *n)
{
	const struct kfunc_sig *sig;
	const char *why;
	char list[400];
	size_t len = 0;
	bool ret;
	int err;

	if (pp->ret ? !strcmp(n->str, "return") : by_position(n->str))
		return 0;
	if (pp->ret) {
		diag(sc, n->line, n->col, "semantic error",
		     "not supported yet: '$%s' at a .return point (read it at the function's entry)", n->str);
		return 1;
	}
	if ((err = kfunc_point_params(pp->glob, &sig, &ret, &why))) {
		diag(sc, n->line, n->col, "semantic error", "'$%s' in probe point %s: %s: use $arg1..$arg6", n->str,
		     pp->text, why);
		return 1;
	}
	list[0] = 0;
	for (unsigned i = 0; i < sig->nargs; i++) {
		if (sig->arg[i].name[0] && !strcmp(sig->arg[i].name, n->str))
			return 0;
		if (sig->arg[i].name[0] && len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, " $%s", sig->arg[i].name);
	}
	diag(sc, n->line, n->col, "semantic error",
	     "'$%s' in probe point %s: the function has no such parameter in registers (it has:%s)", n->str, pp->text,
	     sig->nargs ? list : " none");
	return 1;
}

static int check_refs(struct script *sc, const struct probe_point *pp, const struct node *n)
{
	int errors = 0;
	if (!n || n->kind == N_NUM)
		return 0;
	if (n->kind == N_CTX)
		errors += check_ref(sc, pp, n);
	errors += check_refs(sc, pp, n->a) + check_refs(sc, pp, n->b) + check_refs(sc, pp, n->c) +
		  check_refs(sc, pp, n->d) + check_refs(sc, pp, n->fe_limit) + check_refs(sc, pp, n->fe_slice);
	for (int i = 0; i < n->nargs; i++)
		errors += check_refs(sc, pp, n->args[i]);
	return errors;
}

int check_kernel_refs(struct script *sc)
{
	int errors = 0;
	for (struct probe *p = sc->probes; p; p = p->next)
		for (struct probe_point *pp = p->points; pp; pp = pp->next)
			if (pp->kind == PP_MARK && pp->point && pp->kernel)
				errors += check_refs(sc, pp, p->cond) + check_refs(sc, pp, p->body);
	return errors;
}
