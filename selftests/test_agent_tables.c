/*
 * TABLES, through the raw protocol: plans out of bounds, a second TABLES,
 * TABLES before RING and CONNECT of a plan that is not there are each an
 * ERROR naming the problem, the session goes on, and the target is left
 * running with its text as it was.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "lib/agent_addr.h"
#include "lib/agg.h"
#include "lib/proto.h"
#include "test_trace_util.h"

static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
static struct djp_pbuf b;

static long request(int fd, unsigned type, unsigned *rtype, int *rfd)
{
	CHECK_EQ(djp_proto_send(fd, type, &b, -1), 0);
	return djp_proto_recv(fd, rtype, buf, 3000, rfd);
}

/* A plan's program as TABLES carries it: ops eight to a word, constants. */
static void put_code(const struct djp_agg_code *c)
{
	for (unsigned w = 0; w < DJP_AGG_MAX_CODE / 8; w++) {
		uint64_t v = 0;
		for (unsigned k = 0; k < 8; k++)
			v |= (uint64_t)c->op[w * 8 + k] << (8 * k);
		djp_put_u64(&b, v);
	}
	for (unsigned k = 0; k < DJP_AGG_MAX_IMM; k++)
		djp_put_u64(&b, (uint64_t)c->imm[k]);
}

/* TABLES with one plan; 0 when TABLES_FD came (its fd closed), else the
 * ERROR's -errno, its message in buf. */
static int tables(int fd, uint32_t capacity, const struct djp_agg_plan *p)
{
	unsigned type;
	int rfd = -1;
	long n;

	djp_pbuf_init(&b);
	djp_put_u32(&b, capacity);
	djp_put_u32(&b, 1);
	djp_put_u32(&b, p->key_args);
	djp_put_u32(&b, p->flags);
	djp_put_u32(&b, p->value_arg);
	djp_put_u32(&b, p->hist_kind);
	djp_put_u64(&b, (uint64_t)p->value_const);
	djp_put_u64(&b, (uint64_t)p->hist_start);
	djp_put_u64(&b, (uint64_t)p->hist_interval);
	djp_put_u32(&b, p->nbuckets);
	djp_put_u32(&b, p->str_arg);
	djp_put_u32(&b, p->str_bound);
	for (unsigned k = 0; p->flags & DJP_AGG_NAMED && k < DJP_AGG_MAX_NAMES; k++)
		djp_put_str(&b, p->names[k]);
	if (p->flags & (DJP_AGG_VALUE_CODE | DJP_AGG_COND | DJP_AGG_KEY_CODE)) {
		djp_put_u32(&b, p->code_args);
		put_code(&p->value_code);
		put_code(&p->cond_code);
		djp_put_u32(&b, p->nkeycode);
		for (unsigned k = 0; k < p->nkeycode && k < DJP_AGG_MAX_KEY_ARGS; k++)
			put_code(&p->key_code[k]);
	}
	n = request(fd, DJP_MSG_TABLES, &type, &rfd);
	CHECK(n > 0);
	if (type == DJP_MSG_TABLES_FD) {
		CHECK(rfd >= 0);
		close(rfd);
		return 0;
	}
	CHECK_EQ(type, DJP_MSG_ERROR);
	CHECK(n > 6);
	memmove(buf, buf + 6, (size_t)n - 6); /* i32 -errno, u16 length: the text */
	buf[n - 6] = 0;
	return -1;
}

TEST(agent_tables_refuses_bad_plans)
{
	static const struct djp_agg_plan bad[] = {
		{ .hist_kind = DJP_AGG_HIST_LOG, .nbuckets = 7 },	 /* a log histogram has 128 */
		{ .key_args = 0x1f },					 /* five key arguments */
		{ .flags = DJP_AGG_VALUE_ARG, .value_arg = 40 },	 /* no argument 40 */
		{ .hist_kind = DJP_AGG_HIST_LINEAR, .nbuckets = 10 },	 /* interval 0 */
		{ .key_args = 1, .str_arg = 2, .str_bound = 64 },	 /* a string not in the key */
		{ .key_args = 1, .str_arg = 1, .str_bound = 4000 },	 /* past the largest copy */
		{ .key_args = 2, .flags = DJP_AGG_NAMED, .names = { "fd" } }, /* its name 1 is empty */
		{ .flags = DJP_AGG_NAMED | DJP_AGG_VALUE_ARG, .value_arg = 5 }, /* names 0 to 4 only */
		{ .key_args = 0x20, .flags = DJP_AGG_NAMED },			 /* the same */
		{ .flags = DJP_AGG_COND, .code_args = 1, .cond_code = { .op = { DJP_AGG_OP_ARG, 0, DJP_AGG_OP_ADD } } },
		/* ^ an operand short; v an argument it does not say it reads */
		{ .flags = DJP_AGG_VALUE_CODE, .value_code = { .op = { DJP_AGG_OP_ARG, 0 } } },
		{ .flags = DJP_AGG_VALUE_CODE, .value_code = { .op = { DJP_AGG_OP_IMM, 4 } } }, /* constant 4 of 4 */
		{ .key_args = 0xf, .flags = DJP_AGG_CPU }, /* the CPU a fifth key word */
		/* a computed index a fifth key word */
		{ .key_args = 0xf, .flags = DJP_AGG_KEY_CODE, .code_args = 1, .nkeycode = 1,
		  .key_code = { { .op = { DJP_AGG_OP_ARG, 0 } } } },
	};
	const struct djp_agg_plan good = { .key_args = 1, .flags = DJP_AGG_TID };
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "1000", NULL }, true, -1);
	struct sockaddr_un a;
	socklen_t len;
	unsigned type;
	int fd, rfd = -1, n;

	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(djp_agent_addr_find(t->pid, &a, &len) == 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, len) == 0);
	djp_pbuf_init(&b);
	djp_put_u32(&b, DJP_PROTO_MAGIC);
	djp_put_u32(&b, DJP_PROTO_VERSION);
	CHECK(request(fd, DJP_MSG_HELLO, &type, NULL) > 0);
	CHECK_EQ(type, DJP_MSG_HELLO_REPLY);

	CHECK_EQ(tables(fd, 16, &good), -1);
	CHECK(strstr((char *)buf, "TABLES before RING"));
	djp_pbuf_init(&b);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u64(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0); /* no TSC rate given: the agent measures its own */
	djp_put_u32(&b, 0);
	djp_put_u64(&b, 0);
	djp_put_u64(&b, 0);
	CHECK_EQ(request(fd, DJP_MSG_RING, &type, &rfd), 8);
	CHECK_EQ(type, DJP_MSG_RING_FD);
	close(rfd);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (tables(fd, 16, &bad[i]) != -1 || !strstr((char *)buf, "aggregation tables: Invalid argument"))
			djp_test_fail(__FILE__, __LINE__, "plan %zu: %s", i, (char *)buf);
	}
	CHECK_EQ(tables(fd, 3, &good), -1); /* not a power of two */
	CHECK_EQ(tables(fd, 16, &good), 0);
	CHECK_EQ(tables(fd, 16, &good), -1);
	CHECK(strstr((char *)buf, "has its tables already"));

	djp_pbuf_init(&b);
	djp_put_str(&b, "tt_*");
	djp_put_u32(&b, DJP_CONNECT_AGG);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 1); /* there is plan 0 only */
	CHECK(request(fd, DJP_MSG_CONNECT, &type, NULL) > 0);
	CHECK_EQ(type, DJP_MSG_ERROR);
	CHECK(!tt_sites_changed(t->pid, tt_target(false), &n));
	djp_pbuf_init(&b);
	djp_put_str(&b, "tt_*");
	djp_put_u32(&b, DJP_CONNECT_AGG);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	CHECK(request(fd, DJP_MSG_CONNECT, &type, NULL) > 0);
	CHECK_EQ(type, DJP_MSG_CONNECTED);
	CHECK(tt_sites_changed(t->pid, tt_target(false), &n) > 0);
	close(fd); /* the session ends: disarmed */
	CHECK(tt_wait_restored(t->pid, tt_target(false), 2000));
	CHECK(kill(t->pid, 0) == 0);
	tt_kill(t);
	free(t);
}
