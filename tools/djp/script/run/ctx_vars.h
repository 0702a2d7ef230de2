/*
 * $$parms, $$vars, $$locals and $$return of a hit (ctx_vars.c).
 */
#ifndef DJP_SCRIPT_CTX_VARS_H
#define DJP_SCRIPT_CTX_VARS_H

#include <stddef.h>

#include "tools/djp/script/source.h"

/* Render into buf (as snprintf) the "name=0x.." pairs of the hit ev of
 * site d that `which` ("parms", "vars", "locals", "return") names. */
void ctx_vars_render(char *buf, size_t sz, const struct djp_ev_desc *d, const char *which, const struct djp_ev *ev);

#endif
