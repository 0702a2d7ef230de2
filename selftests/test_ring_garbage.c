/* The consumer treats the region as untrusted: a region full of garbage,
 * a header with one field wrong, a file too short or not sealed, never
 * crash it nor make it hang. */
#include <fcntl.h>
#include <sys/mman.h>

#include "test_ring_util.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill_random(void *p, size_t n)
{
	uint64_t *q = p;
	for (size_t i = 0; i < n / 8; i++)
		q[i] = rnd();
}

static int sealed_memfd(size_t size)
{
	int fd = memfd_create("garbage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return -1;
	return fd;
}

static int accept_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	uint64_t *n = arg;
	/* everything we are given must hold together */
	if (ev->size < 16 || ev->size % 8 || 16u + 8u * ev->nargs > ev->size)
		abort();
	for (unsigned i = 0; i < ev->nargs; i++)
		(void)djp_event_str(ev, i, NULL, NULL);
	{
		unsigned k;
		const uint64_t *pcs = djp_event_ustack(ev, &k);
		/* a stack, if any, inside the event, after the arguments */
		if (pcs && ((const char *)pcs < (const char *)ev->args + 8u * ev->nargs ||
			    (const char *)(pcs + k) > (const char *)ev + ev->size))
			abort();
	}
	(*n)++;
	return 0;
}

static void dummy_done(void *arg, const struct djp_slot_stats *st)
{
}

TEST(ring_consumer_refuses_bad_files)
{
	int fd = sealed_memfd(1 << 20);
	struct djp_region *r;

	CHECK(fd >= 0);
	rng_state = 1;
	{
		void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(m != MAP_FAILED);
		fill_random(m, 1 << 20);
		munmap(m, 1 << 20);
	}
	CHECK(!djp_consumer_open(fd) && errno == EPERM); /* not sealed */
	CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	CHECK(!djp_consumer_open(fd) && errno == EINVAL); /* garbage */
	close(fd);
	fd = sealed_memfd(100);
	CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	CHECK(!djp_consumer_open(fd) && errno == EINVAL); /* too short */
	close(fd);
	CHECK(!djp_consumer_open(-1));

	/* A real header copied into a file too short for the slots it names. */
	r = small_region(4, 8192, 2, DJP_RING_DISCARD);
	fd = sealed_memfd(8192);
	CHECK_EQ(pwrite(fd, r->base, 4096, 0), 4096);
	CHECK_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	CHECK(!djp_consumer_open(fd) && errno == EINVAL);
	close(fd);
	djp_region_destroy(r);
}

TEST(ring_consumer_header_fields_validated)
{
	struct djp_region *r = small_region(4, 8192, 2, DJP_RING_DISCARD);
	struct djp_region_hdr good = *r->hdr;
	size_t nwords = offsetof(struct djp_region_hdr, lost_noslot) / 4;
	int refused = 0;

	rng_state = 2;
	for (size_t w = 0; w < nwords; w++) {
		for (int variant = 0; variant < 4; variant++) {
			uint32_t *p = (uint32_t *)r->hdr + w, v[4] = { 0, ~0u, *p + 1, (uint32_t)rnd() };
			struct djp_consumer *c;
			*r->hdr = good;
			if (v[variant] == *p)
				continue;
			*p = v[variant];
			c = djp_consumer_open(djp_region_fd(r));
			if (!c) {
				CHECK_EQ(errno, EINVAL);
				refused++;
				continue;
			}
			/* accepted: only fields that do not matter (pid, bound,
			 * clock base values) may change */
			djp_consumer_drain(c, &(struct djp_drain_ops){ .event = accept_event }, &(uint64_t){ 0 });
			djp_consumer_close(c);
		}
	}
	CHECK(refused > 40);
	*r->hdr = good;
	djp_region_destroy(r);
}

static uint64_t garbage_round(unsigned mode, int structured)
{
	struct djp_region *r = small_region(8, 8192, 4, mode);
	struct djp_consumer *c = djp_consumer_open(djp_region_fd(r));
	struct djp_drain_ops ops = { .event = accept_event, .slot_done = dummy_done };
	uint64_t n = 0;

	CHECK(c);
	for (unsigned i = 0; i < r->nslots; i++) {
		uint8_t *slot = r->base + DJP_REGION_HDR_SIZE + (uint64_t)i * r->slot_stride;
		struct djp_slot_hdr *s = (struct djp_slot_hdr *)slot;
		uint8_t *data = slot + r->slot_hdr_size;
		fill_random(slot, r->slot_stride);
		if (!structured)
			continue;
		/* plausible state, positions and event headers: the parser
		 * then gets deep before it finds the lie */
		s->owner = (rnd() % 3) | (rnd() & 0xffff) << 32;
		s->tail = rnd() % 100000 & ~7ull;
		s->head = s->tail + (rnd() % (2 * r->ring_size) & ~7ull);
		for (uint64_t off = 0; off < r->ring_size; off += 8 * (1 + rnd() % 6)) {
			struct djp_event *ev = (struct djp_event *)(data + off);
			if (off + 16 > r->ring_size)
				break;
			ev->size = (uint16_t)(rnd() % 8 ? 16 + 8 * (rnd() % 8) : rnd());
			ev->nargs = (uint8_t)(rnd() % 4 ? rnd() % 8 : rnd());
			ev->flags = (uint8_t)(rnd() % 16 ? rnd() & DJP_EVF_STRINGS : rnd());
		}
		for (unsigned k = 0; k < r->nsubbufs; k++)
			s->sb[k].seq = rnd() % 4 ? s->head / r->subbuf_size + 1 - k : rnd();
	}
	/* let the next drains see a change of the garbage too, the header's
	 * high-water mark of slots included (any value: the reader bounds
	 * it by nslots) */
	for (int round = 0; round < 4; round++) {
		r->hdr->slots_used = round & 1 ? (uint32_t)rnd() : r->nslots;
		CHECK(djp_consumer_drain(c, &ops, &n) >= 0);
		for (unsigned i = 0; i < r->nslots; i++) {
			struct djp_slot_hdr *s = (struct djp_slot_hdr *)(r->base + DJP_REGION_HDR_SIZE +
									 (uint64_t)i * r->slot_stride);
			s->owner = (rnd() % 3) | (rnd() & 0xffff) << 32;
			s->head = rnd() % 3 ? s->head + rnd() % 4096 : rnd();
		}
	}
	djp_consumer_close(c);
	djp_region_destroy(r);
	return n;
}

TEST_TIMEOUT(ring_consumer_survives_garbage, 60)
{
	uint64_t t0 = djp_clock_monotonic_ns(), n = 0;
	for (int seed = 1; seed <= 300; seed++) {
		rng_state = (uint64_t)seed * 7919;
		n += garbage_round(seed & 1 ? DJP_RING_DISCARD : DJP_RING_OVERWRITE, seed % 3 != 0);
	}
	CHECK(djp_clock_monotonic_ns() - t0 < 30000000000ull);
	CHECK(n > 0); /* the structured garbage did reach the callback */
	printf("# %llu events made it through the checks\n", (unsigned long long)n);
}
