/* Kernel shim of <inttypes.h> (see errno.h): the kernel's u64 and s64 are
 * long long on every architecture. */
#include "stdint.h"
#define PRIu64 "llu"
#define PRId64 "lld"
#define PRIx64 "llx"
