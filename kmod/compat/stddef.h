/* Kernel shim of <stddef.h> (see errno.h). */
#include <linux/stddef.h>
#include <linux/types.h>
