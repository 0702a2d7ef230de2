/* Kernel shim of <stdbool.h> (see errno.h): the kernel has bool already. */
#include <linux/types.h>
