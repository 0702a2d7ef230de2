/*
 * A probe batch that fails in a dlopen (which cannot return the error to
 * the application) is counted, and the agent's STATS reply tells the tool
 * how many failed since its session began and the last error.  The session
 * runs in this process over a socketpair, the test playing the tool; the
 * failure is injected into a system call of the dlopen's batch
 * (lib/sysops.h), and the library's site must stay as it was.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sys/socket.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "kernel/engine.h"
#include "kernel/agent/agent.h"
#include "lib/markers.h"
#include "lib/proto.h"
#include "lib/sysops.h"

__attribute__((noinline)) static void dltest_here(int x)
{
	MARK(dltest_here_in_main, "x=%d", x);
}

static void nothing(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
}

/* Send a request of `type` with payload b, let the session answer it, and
 * read the answer into buf: its length, the type in *rtype. */
static long ask(struct djp_agent_session *s, int fd, unsigned type, struct djp_pbuf *b, uint8_t *buf,
		unsigned *rtype)
{
	CHECK_EQ(djp_proto_send(fd, type, b, -1), 0);
	CHECK_EQ(djp_agent_session_input(s), 0);
	return djp_proto_recv(fd, rtype, buf, 3000, NULL);
}

TEST(agent_stats_report_dlopen_arming_errors)
{
	static uint8_t buf[DJP_PROTO_MAX_PAYLOAD];
	static struct djp_agent_session s;
	static struct djp_pbuf b;
	struct djp_preader r;
	unsigned rtype, errs;
	int sv[2], id, last;
	long len;
	void *h;

	id = djp_connect("dltest_*", nothing, NULL, 0); /* here now; the library's once loaded */
	CHECK(id >= 0);
	dltest_here(1);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	djp_agent_session_open(&s, sv[0], getpid(), getuid(), false);
	djp_pbuf_init(&b);
	djp_put_u32(&b, DJP_PROTO_MAGIC);
	djp_put_u32(&b, DJP_PROTO_VERSION);
	CHECK(ask(&s, sv[1], DJP_MSG_HELLO, &b, buf, &rtype) > 0);
	CHECK_EQ(rtype, DJP_MSG_HELLO_REPLY);

	/* The n-th system call of the dlopen's batch fails, for n from 1 until
	 * one fails the batch (an early one, a trampoline's mapping, only
	 * makes the site an int3 probe). */
	for (unsigned long n = 1;; n++) {
		errs = djp__engine_background_error(NULL);
		djp_sysops_fail_nth(n, ENOSPC);
		h = dlopen(djp_test_path("libdjp_dltest.so"), RTLD_NOW);
		djp_sysops_fail_nth(0, 0);
		CHECK(h != NULL);
		if (djp__engine_background_error(&last) > errs)
			break;
		CHECK(n < 100);
		CHECK_EQ(dlclose(h), 0);
	}
	CHECK_EQ(last, -ENOSPC);
	{
		/* the library's site was left as it was: its plain NOP */
		static const uint8_t nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
		int (*run)(int) = (int (*)(int))(uintptr_t)dlsym(h, "dltest_run");
		struct djp_marker_list *l;
		struct link_map *lm;
		char err[256];
		int found = 0;
		CHECK(run != NULL);
		CHECK_EQ(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
		CHECK_EQ(djp_markers_read_file(lm->l_name, DJP_READ_NO_DWARF, &l, err, sizeof(err)), 0);
		for (size_t i = 0; i < l->count; i++)
			if (!strcmp(l->v[i].name, "dltest_hit")) {
				CHECK(memcmp((void *)(lm->l_addr + l->v[i].site), nop6, 6) == 0);
				found++;
			}
		djp_marker_list_free(l);
		CHECK_EQ(found, 1);
		run(1);
	}

	djp_pbuf_init(&b);
	len = ask(&s, sv[1], DJP_MSG_STATS, &b, buf, &rtype);
	CHECK(len > 0);
	CHECK_EQ(rtype, DJP_MSG_STATS_REPLY);
	djp_preader_init(&r, buf, (size_t)len);
	djp_get_u64(&r); /* misses */
	djp_get_u64(&r); /* lost_noslot */
	CHECK_EQ(djp_get_u32(&r), 0); /* threads: no ring in this session */
	CHECK_EQ(djp_get_u32(&r), 0); /* markers with lost events */
	errs = djp_get_u32(&r);
	last = (int)djp_get_u32(&r);
	CHECK(djp_preader_done(&r));
	CHECK(errs >= 1);
	CHECK_EQ(last, -ENOSPC);

	CHECK_EQ(djp_agent_session_end(&s), 0);
	close(sv[1]);
	CHECK_EQ(djp_disconnect(id), 0);
	dlclose(h);
}
