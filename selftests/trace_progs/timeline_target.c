/*
 * The target of the timeline tests (test_trace_timeline.c): Perfetto's
 * JSON and the summary page.  Linked without libdjprobe (trace.mk).
 *
 *   timeline_target [REQUESTS [hold]]
 *
 * Two threads, named tl-worker-1 and tl-worker-2, each serve REQUESTS
 * requests (default 6, even), two at a time: tl_req_start of both
 * (id=W*100+I), then for each tl_lock, a call of tl_work(id, 2), which
 * recurses to depth 0 and fires tl_step at each depth on its way back,
 * and tl_unlock; then tl_req_done of both, the first first, so that
 * the two requests overlap without nesting.  tl_work(id, d) returns
 * id * 10 + d.  The main thread prints "worked" once both threads are
 * done, and lets them (and itself) exit at a line "exit" on stdin, so
 * that a test can have the tool read every event while the threads are
 * still there to be named.  With "hold", each worker stops after its first
 * tl_req_start and tl_lock instead, inside both pairs, and waits there
 * (the test of a trace that ends with slices open).
 */
#include <djprobe/marker.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long requests = 6;
static int hold;
static pthread_barrier_t worked, leave;

__attribute__((noipa)) int tl_work(int id, int depth)
{
	int r = depth ? tl_work(id, depth - 1) : 0;
	MARK(tl_step, "id=%d depth=%d", id, depth);
	return r * 0 + id * 10 + depth;
}

static void *worker(void *arg)
{
	int w = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "tl-worker-%d", w);
	pthread_setname_np(pthread_self(), name);
	for (long i = 0; i < requests; i += 2) {
		int ids[2] = { w * 100 + (int)i, w * 100 + (int)i + 1 };
		for (int k = 0; k < 2; k++)
			MARK(tl_req_start, "id=%d kind=%s", ids[k], k ? "put" : "get");
		if (hold) {
			MARK(tl_lock, "id=%d", ids[0]);
			break;
		}
		for (int k = 0; k < 2; k++) {
			MARK(tl_lock, "id=%d", ids[k]);
			tl_work(ids[k], 2);
			MARK(tl_unlock, "id=%d", ids[k]);
		}
		for (int k = 0; k < 2; k++)
			MARK(tl_req_done, "id=%d status=%d", ids[k], 200 + k);
	}
	pthread_barrier_wait(&worked);
	pthread_barrier_wait(&leave);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[2];
	char line[64];

	if (argc > 1)
		requests = atol(argv[1]) & ~1L;
	hold = argc > 2 && !strcmp(argv[2], "hold");
	pthread_barrier_init(&worked, NULL, 3);
	pthread_barrier_init(&leave, NULL, 3);
	for (long w = 0; w < 2; w++)
		pthread_create(&th[w], NULL, worker, (void *)(w + 1));
	pthread_barrier_wait(&worked);
	printf("worked\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "exit\n"))
		;
	pthread_barrier_wait(&leave);
	for (int w = 0; w < 2; w++)
		pthread_join(th[w], NULL);
	return 0;
}
