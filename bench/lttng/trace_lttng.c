/*
 * djprobe's recorder against LTTng-UST, recording the same two-field event,
 * side by side in one process.  Rows "label | value | target | status".
 *
 * Without arguments this is the orchestrator: it starts an lttng-sessiond
 * of its own (LTTNG_HOME and the output in a temporary directory), creates
 * a session, enables djp_bench:hit and starts it, then runs itself with
 * --measure (LTTng-UST registers an application with the session daemon in
 * its constructor, so the session must exist before the program starts),
 * and tears everything down.  The measuring child interleaves, run by run:
 * the NOP, the djprobe marker recorded by the recorder (connected as the
 * agent connects it, drained between batches by a consumer on the other
 * core),
 * and the LTTng-UST tracepoint (drained by LTTng's consumer daemon; the
 * batches are spaced out so that its buffers do not fill).
 *
 * Built by bench/lttng.mk when liblttng-ust-dev is installed; otherwise a
 * stub that prints one row saying so.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef DJP_HAVE_LTTNG
#include "bench/lttng/tp.h"
#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "bench/bench.h"
#include "bench/drain_remote.h"
#include "kernel/agent/recorder.h"
#include "lib/ring.h"

#define RUNS 7
#define BATCH 16384
#define BATCHES 8


ALIGNED void hit_marker(int a, long b)
{
	MARK(bench_lttng_hit, "a=%d b=%ld", a, b);
}

ALIGNED void hit_lttng(int a, long b)
{
	lttng_ust_tracepoint(djp_bench, hit, a, b);
}





static double median(double *v)
{
	return median_of(v, RUNS);
}

static struct djp_consumer *cons;

static int count_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	(void)arg;
	(void)ev;
	(void)tid;
	(void)slot;
	return 0;
}

static const struct djp_drain_ops ops = { count_event, NULL };

static void drain_djprobe(void)
{
	djp_consumer_drain(cons, &ops, NULL);
}

/* djprobe's ring drained from the other core, as LTTng's consumer daemon
 * drains LTTng's (bench/drain_remote.h). */
static void drain_between(fn_t fn)
{
	drain_remote_now();
	if (fn == hit_lttng)
		usleep(20000); /* let LTTng's consumer daemon catch up */
}

static double batch_ns(fn_t fn)
{
	return timed_batches(fn, BATCHES, BATCH, drain_between);
}

static int measure(void)
{
	double nop[RUNS], djp[RUNS], lt[RUNS], m_nop, m_djp, m_lt;
	struct djp_recorder *rec = djp_recorder_create(NULL);
	unsigned nsites = 0;
	int id;

	if (!rec || !(cons = djp_consumer_open(djp_region_fd(rec->region)))) {
		perror("trace_lttng: ring");
		return 1;
	}
	id = djp_recorder_connect(rec, "bench_lttng_hit", 0, NULL, &nsites);
	if (id < 0) {
		fprintf(stderr, "trace_lttng: connect: %d\n", id);
		return 1;
	}
	drain_remote_start(drain_djprobe);
	loop(hit_marker, BATCH);
	loop(hit_lttng, BATCH);
	djp_consumer_drain(cons, &ops, NULL);
	for (int r = 0; r < RUNS; r++) {
		nop[r] = batch_ns(hit_nop);
		djp[r] = batch_ns(hit_marker);
		lt[r] = batch_ns(hit_lttng);
	}
	m_nop = median(nop);
	m_djp = median(djp) - m_nop;
	m_lt = median(lt) - m_nop;
	printf("djprobe recorder, 2 int fields, ns per hit over the NOP | %.3f ns | - | -\n", m_djp);
	printf("LTTng-UST tracepoint recorded, same 2 fields, ns per hit over the NOP | %.3f ns | - | -\n", m_lt);
	if (m_lt < 5)
		printf("LTTng-UST / djprobe per-hit cost | - | >= 6 | error: the tracepoint was not enabled\n");
	else
		printf("LTTng-UST / djprobe per-hit cost | %.2f x | >= 6 | %s\n", m_lt / m_djp,
		       m_lt / m_djp >= 6 ? "ok" : "over");
	djp_disconnect(id);
	return 0;
}

static int sh(const char *fmt, const char *a)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), fmt, a, a);
	return system(cmd);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/djp-lttng-XXXXXX", self[4096];
	ssize_t n;
	int st = 1;
	pid_t c;

	if (argc > 1 && !strcmp(argv[1], "--measure"))
		return measure();
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("LTTNG_HOME", tmp, 1);
	if (sh("lttng-sessiond --daemonize --no-kernel --pidfile=%s/sessiond.pid >/dev/null 2>&1", tmp) ||
	    sh("lttng create djpbench --output=%s/trace >%s/lttng.log 2>&1", tmp) ||
	    system("lttng enable-event -u djp_bench:hit >/dev/null 2>&1") ||
	    system("lttng start >/dev/null 2>&1")) {
		printf("LTTng-UST comparison | - | - | skipped: cannot start an lttng session (see %s)\n", tmp);
		system("lttng destroy -a >/dev/null 2>&1");
		sh("kill $(cat %s/sessiond.pid 2>/dev/null) 2>/dev/null; true", tmp);
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	fflush(stdout);
	c = fork();
	if (c == 0) {
		execl(self, self, "--measure", (char *)NULL);
		_exit(127);
	}
	if (c > 0)
		waitpid(c, &st, 0);
	system("lttng stop >/dev/null 2>&1");
	system("lttng destroy -a >/dev/null 2>&1");
	sh("kill $(cat %s/sessiond.pid 2>/dev/null) 2>/dev/null; true", tmp);
	sh("rm -rf %s", tmp);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

#else /* no LTTng-UST */

int main(void)
{
	printf("LTTng-UST comparison | - | >= 6 | skipped: liblttng-ust-dev and lttng-tools are not installed "
	       "(make bench installs them as root)\n");
	return 0;
}

#endif
