/* Kernel shim of <stdarg.h> (see errno.h). */
#include <linux/stdarg.h>
