/* Kernel shim of <stdio.h> (see errno.h): the shared files only format
 * into buffers (snprintf, vsnprintf). */
#include <linux/kernel.h>
