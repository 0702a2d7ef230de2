/*
 * The disconnect guarantee, under AddressSanitizer: the handler's data is
 * freed the moment djp_disconnect returns, while four threads keep hitting
 * the marker.  Had a handler run after its disconnect, ASan would report a
 * heap-use-after-free and the program would exit non-zero.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"

static atomic_int stop;

__attribute__((noinline)) static void asan_site(long i)
{
	MARK(asan_site, "i=%ld", i);
	__asm__ volatile("" ::: "memory");
}

static void *hammer(void *arg)
{
	(void)arg;
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		asan_site(i);
	return NULL;
}

static void handler(const struct djp_hit *hit, void *data)
{
	long *counter = data;
	counter[djp_hit_arg(hit, 0) & 7]++; /* reads and writes the data */
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 500;
	pthread_t th[4];
	long total = 0;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, hammer, NULL);
	for (int r = 0; r < rounds; r++) {
		long *data = calloc(8, sizeof(long));
		int id = djp_connect("asan_site", handler, data, r % 3 == 2 ? DJP_FORCE_INT3 : 0);
		if (id < 0) {
			fprintf(stderr, "connect: %d\n", id);
			return 2;
		}
		usleep((useconds_t)(rand() % 200));
		if (djp_disconnect(id)) {
			fprintf(stderr, "disconnect failed\n");
			return 2;
		}
		for (int k = 0; k < 8; k++)
			total += data[k];
		free(data); /* right away */
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("%d rounds, %ld hits\n", rounds, total);
	return total > 0 ? 0 : 3;
}
