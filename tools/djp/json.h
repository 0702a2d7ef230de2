/* JSON output shared by `djp list --json` and `djp trace --json`. */
#ifndef DJP_TOOLS_JSON_H
#define DJP_TOOLS_JSON_H

#include <stdio.h>

/* s as a JSON string (null for NULL): quotes, backslashes and control
 * characters escaped, other bytes (UTF-8) as they are. */
void djp_json_string(FILE *out, const char *s);

#endif
