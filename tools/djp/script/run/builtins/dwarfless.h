/*
 * Arguments without debug information: register(), int_arg(n) and their
 * kin (dwarfless.c has the essay).
 */
#ifndef DJP_SCRIPT_DWARFLESS_H
#define DJP_SCRIPT_DWARFLESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "builtins.h"

struct script;
/* At check time, a call n of one of them (BF_REGS): what the session must
 * record (sc->uses_regs, sc->regs_callee), and a literal register name or
 * argument number that can never be read said as a semantic error.  The
 * errors said. */
int dwarfless_check_call(struct script *sc, struct node *n);
/* The view's register that call (pointer_arg(N) and its kin, or
 * register("NAME")) reads whole at a function's entry, for @cast's
 * address (script/typed.c); -1 with one line in err when none. */
int dwarfless_address_reg(const struct node *call, char *err, size_t errsz);
/* At check time, user_string(a) of such a call a, bound bytes: an @var
 * pointer's string is copied at the hit (at most DJP_VARS_STR_MAX; the
 * others are read when the event is processed). */
void dwarfless_string_ref(struct script *sc, struct node *a, unsigned bound);

struct run;
/* user_string() of such a call a: the hit's copy of the string, and the
 * pointer in *addr; NULL with *have false when the hit has none (then
 * read as any address), with *have true when the pointer was NULL or the
 * copy faulted. */
const char *dwarfless_hit_string(struct run *r, struct node *a, uint64_t *addr, bool *have);

#endif
