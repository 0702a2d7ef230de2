/*
 * A recording target against a hostile consumer.
 *
 *   hostile_ring SECONDS discard|overwrite
 *
 * The program records through the real recorder (markers armed with
 * djp_recorder_connect, the lean trampoline's fast entry and the general
 * path, %s arguments too) from more threads than the machine has cores,
 * while a forked child maps the region's memfd read-write, as the djp tool
 * does, and stores random values and chosen ones (2^64 - 8, ~0, 2^63, ring
 * size - 8, ...) into every word of the region header and of every slot
 * header, over and over.  A page with no access rights is placed right after
 * the region, so a producer that writes past its last ring faults instead
 * of corrupting something quietly.
 *
 * Exit 0 when the producers recorded for the whole time and the process is
 * intact (a canary word outside the region is unchanged); death by a signal
 * or exit 1 otherwise.  The selftest runs it for a second in each mode;
 * `make fuzz` runs it for FUZZ_SECONDS.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <djprobe/marker.h>

#include "kernel/agent/recorder.h"

#define NTHREADS 4

static atomic_bool stop;
static atomic_ulong hits;

static void *producer(void *arg)
{
	unsigned long n = 0;
	char text[24];
	long id = (long)arg;

	snprintf(text, sizeof(text), "thread %ld", id);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		MARK(hostile_two, "a=%ld b=%lu", id, n);
		MARK(hostile_four, "a=%ld b=%lu c=%d d=%d", id, n, 3, 4);
		MARK(hostile_eight, "a=%ld b=%lu c=%d d=%d e=%d f=%d g=%d h=%d", id, n, 3, 4, 5, 6, 7, 8);
		if ((n & 255) == 0)
			MARK(hostile_str, "s=%s n=%lu", text, n);
		n++;
	}
	atomic_fetch_add(&hits, n);
	return NULL;
}

static uint64_t pick(uint64_t ring_size)
{
	static const uint64_t chosen[] = { 0, 8, 16, ~0ull, ~0ull - 7, ~0ull - 15, 1ull << 63, (1ull << 63) - 8,
					   0x7fffffffffffffffull, 4096 - 8 };
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)rand() << 32 ^ (uint64_t)rand();
	switch (v & 7) {
	case 0: case 1: case 2:
		return chosen[(v >> 8) % (sizeof(chosen) / sizeof(chosen[0]))];
	case 3:
		return ring_size - 8 * ((v >> 8) & 7);
	case 4:
		return ~0ull - ((v >> 8) & 0xfff);
	default:
		return v;
	}
}

/* The child: scribble on every shared word that is not ring data. */
static void hostile(int fd, size_t total, uint64_t slots_offset, uint64_t stride, uint64_t slot_hdr, unsigned nslots,
		    uint64_t ring_size)
{
	uint64_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (base == MAP_FAILED)
		_exit(2);
	for (;;) {
		for (uint64_t w = 0; w < slots_offset / 8; w++)
			base[w] = pick(ring_size);
		for (unsigned i = 0; i < nslots; i++) {
			uint64_t *s = base + (slots_offset + i * stride) / 8;
			for (uint64_t w = 0; w < slot_hdr / 8; w++)
				s[w] = pick(ring_size);
		}
	}
}

int main(int argc, char **argv)
{
	static volatile uint64_t canary_before = 0x5a5a5a5a5a5a5a5aull;
	struct djp_ring_opts o = { .sz = sizeof(o), .nslots = NTHREADS, .ring_size = 1 << 16, .nsubbufs = 4 };
	struct djp_recorder *rec;
	struct djp_region *r;
	pthread_t th[NTHREADS];
	unsigned nsites = 0;
	int seconds, id, status;
	pid_t child;
	uint8_t *area;

	if (argc != 3 || (seconds = atoi(argv[1])) <= 0 ||
	    (strcmp(argv[2], "discard") && strcmp(argv[2], "overwrite"))) {
		fprintf(stderr, "usage: hostile_ring SECONDS discard|overwrite\n");
		return 2;
	}
	o.mode = strcmp(argv[2], "discard") ? DJP_RING_OVERWRITE : DJP_RING_DISCARD;
	rec = djp_recorder_create(&o);
	if (!rec) {
		perror("hostile_ring: recorder");
		return 1;
	}
	r = rec->region;
	/* A fault, not silent damage, for a write past the last ring: move the
	 * region (no thread has recorded yet) to the start of a reservation
	 * whose last page stays inaccessible. */
	area = mmap(NULL, r->size + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED || mremap(r->base, r->size, r->size, MREMAP_MAYMOVE | MREMAP_FIXED, area) != area) {
		perror("hostile_ring: guard page");
		return 1;
	}
	r->base = area;
	r->hdr = (struct djp_region_hdr *)area;
	id = djp_recorder_connect(rec, "hostile_*", 0, NULL, &nsites);
	if (id < 0 || nsites != 4) {
		fprintf(stderr, "hostile_ring: connect: %d, %u sites\n", id, nsites);
		return 1;
	}
	child = fork();
	if (child == 0)
		hostile(djp_region_fd(r), r->size, DJP_REGION_HDR_SIZE, r->slot_stride, r->slot_hdr_size, r->nslots,
			r->ring_size);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, producer, (void *)i);
	sleep((unsigned)seconds);
	atomic_store(&stop, true);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	if (WIFEXITED(status)) {
		fprintf(stderr, "hostile_ring: the consumer could not map the region\n");
		return 1;
	}
	djp_disconnect(id);
	if (canary_before != 0x5a5a5a5a5a5a5a5aull || atomic_load(&hits) == 0) {
		fprintf(stderr, "hostile_ring: canary or hit count wrong\n");
		return 1;
	}
	printf("hostile_ring: %s: %lu hits recorded against a hostile consumer\n", argv[2], atomic_load(&hits));
	return 0;
}
