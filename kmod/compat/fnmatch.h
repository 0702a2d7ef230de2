/* Kernel shim of <fnmatch.h> (see errno.h): lib/marker_match.c's globs are
 * glob_match()'s here, which knows *, ? and [...] with ranges and !, but no
 * backslash escape and no [:class:].  Only a flags of 0 is ever passed. */
#include <linux/glob.h>
#define fnmatch(pattern, string, flags) (glob_match((pattern), (string)) ? 0 : 1)
