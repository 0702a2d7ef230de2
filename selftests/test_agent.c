/* The agent's guarantees: a tool that dies, even by SIGKILL, leaves every
 * site restored within a second; a peer of another uid is refused; a
 * malformed frame ends the session and disarms. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/agent_addr.h"
#include "lib/proto.h"
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
