/* Kernel shim of <stdint.h> (see errno.h): <linux/types.h> has the
 * uintN_t and intN_t types; only the limits are missing. */
#include <linux/types.h>
#include <linux/limits.h>
#ifndef UINT32_MAX
#define UINT32_MAX U32_MAX
#endif
#ifndef UINT64_MAX
#define UINT64_MAX U64_MAX
#endif
#ifndef INT64_MAX
#define INT64_MAX S64_MAX
#endif
