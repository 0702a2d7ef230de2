/*
 * Arguments without debug information: register(), int_arg(n) and their
 * kin (dwarfless.c has the essay).
 */
#ifndef DJP_SCRIPT_DWARFLESS_H
#define DJP_SCRIPT_DWARFLESS_H

#include "builtins.h"

struct script;
/* At check time, a call n of one of them (BF_REGS): what the session must
 * record (sc->uses_regs, sc->regs_callee), and a literal register name or
 * argument number that can never be read said as a semantic error.  The
 * errors said. */
int dwarfless_check_call(struct script *sc, struct node *n);

#endif
