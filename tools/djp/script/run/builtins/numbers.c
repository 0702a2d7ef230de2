/*
 * Built-in functions of numbers: byte order (ntohl and the like, of the
 * low 32 or 16 bits), randint() and the machine's CPU count.
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
