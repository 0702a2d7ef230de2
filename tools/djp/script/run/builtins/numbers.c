/*
 * Built-in functions of numbers: byte order (ntohl and the like, of the
 * low 32 or 16 bits), randint(), the machine's CPU count, and the
 * kernel's device numbers (MAJOR, MINOR, MKDEV: 12 bits of major over
 * 20 of minor, include/linux/kdev_t.h, not user space's dev_t).
 */
#include <stdlib.h>
#include <unistd.h>

#include "tools/djp/script/run/interp.h"

int64_t bi_ntohl(struct run *r, struct node *n)
{
	return (int64_t)__builtin_bswap32((uint32_t)eval_n(r, n->args[0]));
}

int64_t bi_htonl(struct run *r, struct node *n)
{
	return (int64_t)__builtin_bswap32((uint32_t)eval_n(r, n->args[0]));
}

int64_t bi_ntohs(struct run *r, struct node *n)
{
	return (int64_t)__builtin_bswap16((uint16_t)eval_n(r, n->args[0]));
}

int64_t bi_htons(struct run *r, struct node *n)
{
	return (int64_t)__builtin_bswap16((uint16_t)eval_n(r, n->args[0]));
}

/* 0 <= randint(n) < n, for n up to 2^32 - 1 as stap: from 62 random bits,
 * so that the modulo's bias is negligible */
int64_t bi_randint(struct run *r, struct node *n)
{
	int64_t range = eval_n(r, n->args[0]);
	if (range <= 0 || range > 0xffffffffll)
		rt_error(r, n, "invalid range for randint(%lld)", (long long)range);
	return (int64_t)(((uint64_t)random() << 31 ^ (uint64_t)random()) % (uint64_t)range);
}

int64_t bi_num_online_cpus(struct run *r, struct node *n)
{
	return sysconf(_SC_NPROCESSORS_ONLN);
}

#define KDEV_MINORBITS 20
#define KDEV_MINORMASK ((1ll << KDEV_MINORBITS) - 1)

int64_t bi_dev_major(struct run *r, struct node *n)
{
	return (int64_t)((uint64_t)eval_n(r, n->args[0]) >> KDEV_MINORBITS & 0xfff);
}

int64_t bi_dev_minor(struct run *r, struct node *n)
{
	return eval_n(r, n->args[0]) & KDEV_MINORMASK;
}

int64_t bi_dev_mkdev(struct run *r, struct node *n)
{
	int64_t major = eval_n(r, n->args[0]), minor = eval_n(r, n->args[1]);

	return (int64_t)((uint64_t)major << KDEV_MINORBITS | ((uint64_t)minor & KDEV_MINORMASK));
}
