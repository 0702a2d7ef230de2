/* Ring buffers across processes: 8 producer threads (on however few cores
 * there are) and a consumer in another process that receives the memfd over
 * a socket.  Every event is accounted for, per thread: received + lost ==
 * produced, and none is torn (checksummed payloads, strictly increasing
 * sequence numbers). */
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "test_ring_util.h"

#define NTHREADS 8
#define PER_THREAD 300000

struct report {
	uint32_t tid;
	uint64_t attempts, ok;
};

struct worker {
	struct djp_region *r;
	unsigned idx;
	struct report rep;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t a[4];

	w->rep.tid = test_gettid();
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		unsigned nargs = 3 + (unsigned)(i & 1);
		a[0] = w->idx;
		a[1] = i;
		a[2] = payload_sum(w->idx, i);
		a[3] = ~a[2];
		int rc = djp_ring_record(w->r, 100 + w->idx, a, nargs, 0, 0);
		if (rc != 0 && rc != -ENOBUFS)
			abort();
		w->rep.attempts++;
		w->rep.ok += rc == 0;
		if ((i & 4095) == 0)
			sched_yield();
	}
	return NULL;
}

static int send_fd(int sock, int fd)
{
	char byte = 0, cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &mh, 0) != 1 || !(cm = CMSG_FIRSTHDR(&mh)) || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* ---- the consumer process ---- */

struct seen {
	uint32_t tid;
	uint64_t received, next, torn, lost;
	int done;
};

struct consumer_state {
	struct seen t[NTHREADS];
	uint64_t foreign;
};

static int on_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct consumer_state *cs = arg;
	uint64_t idx = ev->nargs >= 3 ? ev->args[0] : UINT64_MAX;
	struct seen *s;

	if (idx >= NTHREADS) {
		cs->foreign++;
		return 0;
	}
	s = &cs->t[idx];
	if (!s->tid)
		s->tid = tid;
	if (s->tid != tid || ev->marker_id != 100 + idx || ev->nargs != 3 + (ev->args[1] & 1) ||
	    ev->size != 16 + 8 * ev->nargs || ev->args[1] < s->next || ev->args[2] != payload_sum(idx, ev->args[1]) ||
	    (ev->nargs == 4 && ev->args[3] != ~ev->args[2]))
		s->torn++;
	s->next = ev->args[1] + 1;
	s->received++;
	return 0;
}

static void on_slot_done(void *arg, const struct djp_slot_stats *st)
{
	struct consumer_state *cs = arg;
	for (int i = 0; i < NTHREADS; i++) {
		if (cs->t[i].tid == st->tid) {
			cs->t[i].lost += st->lost_full + st->lost_nested;
			cs->t[i].done++;
		}
	}
}

static int consumer_main(int sock)
{
	struct consumer_state cs = { 0 };
	struct djp_drain_ops ops = { .event = on_event, .slot_done = on_slot_done };
	struct report rep[NTHREADS];
	struct djp_consumer *c;
	int fd = recv_fd(sock), fails = 0;
	size_t got = 0;

	if (fd < 0 || !(c = djp_consumer_open(fd))) {
		fprintf(stderr, "# consumer: cannot open the region\n");
		return 1;
	}
	if (write(sock, "R", 1) != 1)
		return 1;
	for (;;) {
		struct pollfd pfd = { sock, POLLIN, 0 };
		if (djp_consumer_drain(c, &ops, &cs) < 0)
			return 1;
		if (poll(&pfd, 1, 0) == 1)
			break;
		usleep(200);
	}
	while (got < sizeof(rep)) {
		ssize_t n = read(sock, (char *)rep + got, sizeof(rep) - got);
		if (n <= 0)
			return 1;
		got += (size_t)n;
	}
	/* the threads have been joined: drain what is left, and recycle */
	djp_consumer_drain(c, &ops, &cs);
	djp_consumer_drain(c, &ops, &cs);
	for (int i = 0; i < NTHREADS; i++) {
		struct seen *s = &cs.t[i];
		if (s->tid != rep[i].tid || s->done != 1 || s->torn || s->received != rep[i].ok ||
		    s->received + s->lost != rep[i].attempts) {
			fprintf(stderr,
				"# thread %d: tid %u/%u done %d torn %llu received %llu ok %llu lost %llu attempts %llu\n",
				i, s->tid, rep[i].tid, s->done, (unsigned long long)s->torn,
				(unsigned long long)s->received, (unsigned long long)rep[i].ok,
				(unsigned long long)s->lost, (unsigned long long)rep[i].attempts);
			fails++;
		}
	}
	if (cs.foreign || djp_consumer_lost_noslot(c)) {
		fprintf(stderr, "# foreign events %llu, no-slot losses %llu\n", (unsigned long long)cs.foreign,
			(unsigned long long)djp_consumer_lost_noslot(c));
		fails++;
	}
	{
		uint64_t rx = 0, lost = 0;
		for (int i = 0; i < NTHREADS; i++)
			rx += cs.t[i].received, lost += cs.t[i].lost;
		printf("# received %llu, lost %llu\n", (unsigned long long)rx, (unsigned long long)lost);
	}
	djp_consumer_close(c);
	return fails ? 1 : 0;
}

static void run_mt(unsigned mode_ring_size)
{
	struct djp_region *r = small_region(16, mode_ring_size, 8, DJP_RING_DISCARD);
	struct worker w[NTHREADS];
	struct report rep[NTHREADS];
	pthread_t th[NTHREADS];
	int sv[2], st;
	char ready;
	pid_t pid;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		djp_region_destroy(r); /* the consumer gets only what the socket brings */
		fflush(stdout);
		st = consumer_main(sv[1]);
		fflush(stdout);
		_exit(st);
	}
	close(sv[1]);
	CHECK_EQ(send_fd(sv[0], djp_region_fd(r)), 0);
	CHECK_EQ(read(sv[0], &ready, 1), 1);
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .r = r, .idx = i };
		CHECK_EQ(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++) {
		CHECK_EQ(pthread_join(th[i], NULL), 0);
		rep[i] = w[i].rep;
	}
	ring_reap_joined(r);
	CHECK_EQ(write(sv[0], rep, sizeof(rep)), (ssize_t)sizeof(rep));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	close(sv[0]);
	djp_region_destroy(r);
}

/* Small rings: the consumer falls behind and the producers drop. */
TEST_TIMEOUT(ring_mt_cross_process_small_rings, 60)
{
	run_mt(16384);
}

/* Roomy rings: (nearly) nothing is lost, everything arrives whole. */
TEST_TIMEOUT(ring_mt_cross_process_large_rings, 60)
{
	run_mt(1 << 20);
}
