/* Kernel shim of <string.h> (see errno.h). */
#include <linux/string.h>
