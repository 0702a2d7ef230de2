/* Kernel shim of <errno.h> for the files djprobe.ko shares with user space
 * (kmod/Kbuild lists them): the same E* names, from the kernel. */
#include <linux/errno.h>
/* user space's ENOTSUP is EOPNOTSUPP, as in glibc */
#ifndef ENOTSUP
#define ENOTSUP EOPNOTSUPP
#endif
