/* How the engine will arm a marker site, told from its file (site_arming.c). */
#ifndef DJP_TOOLS_SITE_ARMING_H
#define DJP_TOOLS_SITE_ARMING_H

#include <stdbool.h>

#include "lib/markers.h"

/* True: a jump, over a run that starts *pre bytes before the site (0: at
 * it).  False: an int3 probe, *why saying why (one line). */
bool djp_site_arming(const char *path, const struct djp_marker_info *m, const char **why, unsigned *pre);

#endif
