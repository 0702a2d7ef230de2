/*
 * The function around a marker's site, for probefunc() (site_function.c
 * has the essay).
 */
#ifndef DJP_SCRIPT_SITE_FUNCTION_H
#define DJP_SCRIPT_SITE_FUNCTION_H

#include <stdint.h>

#include "source.h"

struct site_functions;
struct site_functions *site_functions_new(void);
void site_functions_free(struct site_functions *c);
/* The function around d's site in process pid; "" when unknown. */
const char *site_function(struct site_functions *c, int32_t pid, const struct djp_ev_desc *d);

#endif
