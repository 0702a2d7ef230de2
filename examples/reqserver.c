/*
 * reqserver: a toy multi-threaded request server with markers, for the
 * `djp trace` demo.
 *
 *   reqserver [--requests N] [--threads T] [--rate R]
 *
 * A generator thread queues N requests (0: until killed) of four kinds,
 * at most R per second (0: as fast as the workers go); T worker threads
 * serve them.  Each request passes three markers:
 *
 *   req_start  id=%d kind=%s                  when a worker takes it
 *   req_done   id=%d kind=%s latency_ns=%lu   when it is served
 *   req_error  id=%d kind=%s err=%d           when it fails (every 17th put)
 *
 * The markers are header-only: this program links nothing of djprobe, and
 * costs one NOP per marker until `djp trace` connects.
 */
#include <djprobe/marker.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QUEUE 256

static const char *const kinds[] = { "get", "put", "delete", "scan" };

struct request {
	int id;
	int kind;
	unsigned long queued_ns;
};

static struct request queue[QUEUE];
static unsigned head, tail;
static int done_generating;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static long nrequests = 2000, rate;
static int nthreads = 4;

static unsigned long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

/* Pretend to work: a little arithmetic, more for a scan. */
static int serve(const struct request *r)
{
	volatile unsigned long x = (unsigned long)r->id;
	int rounds = r->kind == 3 ? 20000 : 2000;
	for (int i = 0; i < rounds; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return r->kind == 1 && r->id % 17 == 0 ? -ENOSPC : 0;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		struct request r;
		int err;
		pthread_mutex_lock(&lock);
		while (head == tail && !done_generating)
			pthread_cond_wait(&not_empty, &lock);
		if (head == tail) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		r = queue[head++ % QUEUE];
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);

		MARK(req_start, "id=%d kind=%s", r.id, kinds[r.kind]);
		err = serve(&r);
		if (err)
			MARK(req_error, "id=%d kind=%s err=%d", r.id, kinds[r.kind], err);
		else
			MARK(req_done, "id=%d kind=%s latency_ns=%lu", r.id, kinds[r.kind], now_ns() - r.queued_ns);
	}
}

static void *generator(void *arg)
{
	unsigned seed = 1;
	(void)arg;
	for (long id = 1; nrequests == 0 || id <= nrequests; id++) {
		pthread_mutex_lock(&lock);
		while (tail - head == QUEUE)
			pthread_cond_wait(&not_full, &lock);
		seed = seed * 1103515245u + 12345u;
		queue[tail++ % QUEUE] = (struct request){ (int)id, (int)(seed >> 16) % 4, now_ns() };
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
		if (rate > 0)
			usleep((useconds_t)(1000000 / rate));
	}
	pthread_mutex_lock(&lock);
	done_generating = 1;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t gen, workers[64];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--requests") && i + 1 < argc)
			nrequests = atol(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
			rate = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: reqserver [--requests N] [--threads T] [--rate R]\n");
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64 || nrequests < 0) {
		fprintf(stderr, "reqserver: --threads 1..64, --requests >= 0\n");
		return 2;
	}
	pthread_create(&gen, NULL, generator, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&workers[i], NULL, worker, NULL);
	pthread_join(gen, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i], NULL);
	printf("reqserver: served %ld requests with %d threads\n", nrequests, nthreads);
	return 0;
}
