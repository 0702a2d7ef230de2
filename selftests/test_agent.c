/* The agent's guarantees: a tool that dies, even by SIGKILL, leaves every
 * site restored within a second; a peer of another uid is refused; a
 * malformed frame ends the session and disarms. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/agent_addr.h"
#include "lib/clock.h"
#include "lib/proto.h"
#include "lib/ring.h"
#include "test_trace_util.h"

static struct tproc *start_target(void)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "1000", NULL }, true, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	return t;
}

static int agent_connect(pid_t pid)
{
	struct sockaddr_un a;
	socklen_t len;
	int fd;
	if (djp_agent_addr_find(pid, &a, &len))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, len))
		return -1;
	return fd;
}

static void disarm_on_tool_kill(bool o0)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(o0), "--tick-us", "1000", NULL }, true, -1);
	struct tproc *p;
	char pid[16];
	int n;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_*", NULL }, false, -1);
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	CHECK(tt_sites_changed(t->pid, tt_target(o0), &n) == n && n >= 3);
	kill(p->pid, SIGKILL);
	CHECK(tt_wait_restored(t->pid, tt_target(o0), 1000));
	/* ... and the target keeps running. */
	CHECK(kill(t->pid, 0) == 0);
	tt_send(t, "burst 10\n");
	CHECK(tt_wait_out(t, "burst 10 ", 5000));
	tt_kill(t);
	tt_finish(p, 1000);
	free(p);
	free(t);
}

TEST(agent_disarms_when_tool_is_killed)
{
	disarm_on_tool_kill(false);
}

TEST(agent_disarms_when_tool_is_killed_O0)
{
	disarm_on_tool_kill(true);
}

TEST(agent_refuses_other_uid)
{
	struct tproc *t;
	pid_t c;
	int st;

	if (geteuid() != 0)
		SKIP("needs root to connect as another uid");
	t = start_target();
	c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
		struct djp_pbuf *b = malloc(sizeof(*b));
		unsigned type;
		struct sockaddr_un a;
		socklen_t len;
		long n;
		int fd;
		/* The name, found as root (nobody cannot read the target's
		 * descriptors, which is what keeps it from finding it). */
		if (djp_agent_addr_find(t->pid, &a, &len))
			_exit(9);
		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, len))
			_exit(11);
		djp_pbuf_init(b);
		djp_put_u32(b, DJP_PROTO_MAGIC);
		djp_put_u32(b, DJP_PROTO_VERSION);
		djp_proto_send(fd, DJP_MSG_HELLO, b, -1);
		n = djp_proto_recv(fd, &type, buf, 3000, NULL);
		if (n < 0 || type != DJP_MSG_ERROR)
			_exit(12);
		/* ... then the agent hangs up. */
		n = djp_proto_recv(fd, &type, buf, 3000, NULL);
		_exit(n == -ECONNRESET ? 0 : 13);
	}
	CHECK_EQ(waitpid(c, &st, 0), c);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK(kill(t->pid, 0) == 0);
	tt_kill(t);
	free(t);
}

static long request(int fd, unsigned type, struct djp_pbuf *b, uint8_t *buf, unsigned *rtype, int *rfd)
{
	CHECK_EQ(djp_proto_send(fd, type, b, -1), 0);
	return djp_proto_recv(fd, rtype, buf, 3000, rfd);
}

/* Arm through the raw protocol, then send garbage: the agent must end the
 * session and disarm. */
TEST(agent_malformed_frame_disarms)
{
	static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
	static struct djp_pbuf b;
	struct tproc *t = start_target();
	unsigned type;
	int fd = agent_connect(t->pid), rfd = -1, n;
	static const uint8_t garbage[16] = { 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0 };

	CHECK(fd >= 0);
	djp_pbuf_init(&b);
	djp_put_u32(&b, DJP_PROTO_MAGIC);
	djp_put_u32(&b, DJP_PROTO_VERSION);
	CHECK(request(fd, DJP_MSG_HELLO, &b, buf, &type, NULL) > 0);
	CHECK_EQ(type, DJP_MSG_HELLO_REPLY);
	djp_pbuf_init(&b);
	for (int i = 0; i < 5; i++)
		djp_put_u32(&b, 0);
	b.len = 0;
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u64(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0); /* no TSC rate given: the agent measures its own */
	djp_put_u32(&b, 0);
	djp_put_u64(&b, 0);
	djp_put_u64(&b, 0);
	CHECK_EQ(request(fd, DJP_MSG_RING, &b, buf, &type, &rfd), 8);
	CHECK_EQ(type, DJP_MSG_RING_FD);
	CHECK(rfd >= 0);
	close(rfd);
	djp_pbuf_init(&b);
	djp_put_str(&b, "tt_*");
	djp_put_u32(&b, 0); /* flags */
	djp_put_u32(&b, 0); /* string arguments */
	djp_put_u32(&b, 0); /* their bound */
	CHECK(request(fd, DJP_MSG_CONNECT, &b, buf, &type, NULL) > 0);
	CHECK_EQ(type, DJP_MSG_CONNECTED);
	CHECK(tt_sites_changed(t->pid, tt_target(false), &n) > 0);
	/* A string field that runs past its frame. */
	djp_pbuf_init(&b);
	djp_put_u16(&b, 100);
	CHECK_EQ(djp_proto_send(fd, DJP_MSG_CONNECT, &b, -1), 0);
	CHECK_EQ(djp_proto_recv(fd, &type, buf, 3000, NULL), -ECONNRESET);
	CHECK(tt_wait_restored(t->pid, tt_target(false), 1000));
	close(fd);

	/* A header with an impossible length: hung up on, target unharmed. */
	fd = agent_connect(t->pid);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, garbage, sizeof(garbage)), (long)sizeof(garbage));
	CHECK_EQ(djp_proto_recv(fd, &type, buf, 3000, NULL), -ECONNRESET);
	close(fd);
	CHECK(kill(t->pid, 0) == 0);
	tt_kill(t);
	free(t);
}

/* Requests of every type with random payloads: each is answered or ends
 * the session; the target lives on and is left with its text intact. */
TEST_TIMEOUT(agent_survives_random_requests, 60)
{
	static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
	static struct djp_pbuf b;
	struct tproc *t = start_target();
	unsigned seed = 12345, type;

	for (int iter = 0; iter < 300; iter++) {
		int fd = agent_connect(t->pid), rfd;
		long n;
		CHECK(fd >= 0);
		djp_pbuf_init(&b);
		djp_put_u32(&b, DJP_PROTO_MAGIC);
		djp_put_u32(&b, DJP_PROTO_VERSION);
		CHECK(request(fd, DJP_MSG_HELLO, &b, buf, &type, NULL) > 0);
		for (int k = 0; k < 4; k++) {
			unsigned len;
			djp_pbuf_init(&b);
			seed = seed * 1103515245u + 12345u;
			type = 1 + (seed >> 16) % 8;
			len = (seed >> 8) % 24;
			if (type == DJP_MSG_BYE || type == DJP_MSG_HELLO)
				type = DJP_MSG_CONNECT;
			if (type == DJP_MSG_CONNECT && (seed & 1)) {
				djp_put_str(&b, (seed & 2) ? "tt_*" : "*");
				djp_put_u32(&b, (seed >> 3) & 1);
			} else {
				for (unsigned i = 0; i < len; i++) {
					seed = seed * 1103515245u + 12345u;
					djp_put_u8(&b, (uint8_t)(seed >> 16));
				}
			}
			if (djp_proto_send(fd, type, &b, -1))
				break;
			do {
				rfd = -1;
				n = djp_proto_recv(fd, &type, buf, 2000, &rfd);
				if (rfd >= 0)
					close(rfd);
			} while (n >= 0 && type == DJP_MSG_MARKERS);
			CHECK(n != -ETIMEDOUT);
			if (n < 0)
				break;
		}
		close(fd);
	}
	CHECK(kill(t->pid, 0) == 0);
	CHECK(tt_wait_restored(t->pid, tt_target(false), 1000));
	tt_send(t, "burst 10\n");
	CHECK(tt_wait_out(t, "burst 10 ", 5000));
	tt_kill(t);
	free(t);
}

/* The agent registers for membarrier's SYNC_CORE as it starts, while its
 * process has one thread (free then; an RCU grace period, some 10 ms, once
 * a second thread shares the address space), so that the first arming
 * does not wait for it.  Nothing is armed here: the program asks the
 * kernel itself.  With DJP_SYNC=shootdown the agent uses no membarrier,
 * and the same question gets EPERM. */
TEST(agent_registers_sync_core_as_it_starts)
{
	struct tproc *t = start_target(), *s;

	tt_send(t, "membarrier\n");
	CHECK(tt_wait_out(t, "membarrier sync_core 0\n", 5000));
	tt_kill(t);
	free(t);
	s = tt_spawn((char *const[]){ "/usr/bin/env", "DJP_SYNC=shootdown", (char *)tt_target(false), "--tick-us",
				      "1000", NULL },
		     true, -1);
	CHECK(tt_wait_out(s, "ready", 10000));
	tt_send(s, "membarrier\n");
	CHECK(tt_wait_out(s, "membarrier sync_core EPERM\n", 5000));
	tt_kill(s);
	free(s);
}

/* RING carries the tool's TSC rate: the agent takes it (exactly: it is not
 * measured again, which took the process 15 ms) with bases of its own, so
 * its clock converts to this machine's CLOCK_MONOTONIC; a rate that makes
 * no sense is not taken. */
static void ring_with_rate(const struct djp_clock_params *rate, struct djp_clock_params *got)
{
	static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
	static struct djp_pbuf b;
	struct tproc *t = start_target();
	const struct djp_region_hdr *h;
	unsigned type;
	int fd = agent_connect(t->pid), rfd = -1;

	CHECK(fd >= 0);
	djp_pbuf_init(&b);
	djp_put_u32(&b, DJP_PROTO_MAGIC);
	djp_put_u32(&b, DJP_PROTO_VERSION);
	CHECK(request(fd, DJP_MSG_HELLO, &b, buf, &type, NULL) > 0);
	djp_pbuf_init(&b);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u64(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, rate->kind);
	djp_put_u32(&b, rate->shift);
	djp_put_u64(&b, rate->mult);
	djp_put_u64(&b, rate->raw_hz);
	CHECK_EQ(request(fd, DJP_MSG_RING, &b, buf, &type, &rfd), 8);
	CHECK_EQ(type, DJP_MSG_RING_FD);
	h = mmap(NULL, DJP_REGION_HDR_SIZE, PROT_READ, MAP_SHARED, rfd, 0);
	CHECK(h != MAP_FAILED);
	*got = h->clock;
	munmap((void *)h, DJP_REGION_HDR_SIZE);
	close(rfd);
	close(fd);
	tt_kill(t);
	free(t);
}

TEST(agent_ring_takes_the_tools_tsc_rate)
{
	struct djp_clock_params rate = *djp_clock_params(), got;
	uint64_t raw, ns;

	if (rate.kind != DJP_CLOCK_TSC)
		djp_test_skip("the TSC is not invariant here: events carry CLOCK_MONOTONIC, no rate to give");
	/* a rate a little off the one measured here (0.001 %): the agent's own
	 * measurement would not give it to the last bit */
	rate.mult += rate.mult / 100000;
	rate.raw_hz -= rate.raw_hz / 100000;
	ring_with_rate(&rate, &got);
	CHECK_EQ(got.kind, DJP_CLOCK_TSC);
	CHECK_EQ(got.mult, rate.mult);
	CHECK_EQ(got.raw_hz, rate.raw_hz);
	/* its bases are its own: now, converted, is now */
	raw = djp_clock_tsc();
	ns = djp_clock_monotonic_ns();
	CHECK(djp_clock_to_ns(&got, raw) + 50000000 > ns && djp_clock_to_ns(&got, raw) < ns + 50000000);
	/* nonsense (a 5 Hz TSC) is not taken: the agent measures */
	rate.raw_hz = 5;
	ring_with_rate(&rate, &got);
	CHECK_EQ(got.kind, DJP_CLOCK_TSC);
	CHECK(got.raw_hz != 5 && got.mult != rate.mult);
}
