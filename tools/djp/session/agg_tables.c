/*
 * Reading the tables region (lib/agg.h) that the agent of a traced
 * process writes: per-marker lost counters and the aggregation tables of
 * kernel/agent/agg.c.
 *
 * Nothing in the region is trusted.  The header is copied and checked
 * once, and every plan's geometry is computed here from the header's
 * capacity and slot count and the plan's bucket count, exactly as the
 * agent computes it, and must equal what the region says; then every
 * table lies inside the mapping whatever its words say.  A table's `used`
 * is clamped to its capacity.
 *
 * Merging by difference.  A table is never reset (a ring slot recycled for
 * another thread goes on in it), so each read hands out what every entry
 * gained since the last one: counts, sums, sums of squares and buckets as
 * differences with a private copy of what was read before; min and max as
 * they are (a minimum over more hits only falls).  The writer stores the
 * count last, with release, and it is loaded first here, with acquire:
 * everything of the hits it counts is there, maybe with a part of the
 * next hit's, which the next read's difference accounts for.  After the
 * probes are disconnected (BYE) a read is exact.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/djp/session/agg_tables.h"
#include "lib/ring.h"

struct shadow {
	uint64_t *w; /* per entry: count, sum, sumsq lo, sumsq hi, buckets */
	uint32_t n;  /* entries copied */
};

struct djp_tables {
	uint8_t *base;
	size_t size;
	struct djp_tables_hdr h;
	struct djp_agg_plan plan[DJP_AGG_MAX_PLANS];
	struct shadow *shadow; /* nplans * nslots */
};

static bool geometry_ok(struct djp_tables *t)
{
	const struct djp_tables_hdr *h = &t->h;
	uint64_t off;

	if (h->magic != DJP_TABLES_MAGIC || h->version != DJP_TABLES_VERSION || h->hdr_size != sizeof(*h) ||
	    h->nids != DJP_TABLES_NIDS || h->nplans > DJP_AGG_MAX_PLANS || !h->nslots || h->nslots > 65536 ||
	    !h->capacity || h->capacity > DJP_AGG_MAX_CAPACITY || (h->capacity & (h->capacity - 1)) ||
	    h->lost_offset != DJP_TABLES_HDR_SIZE || h->plans_offset != DJP_TABLES_HDR_SIZE + (uint64_t)h->nids * 8 ||
	    h->total_size > t->size)
		return false;
	off = h->plans_offset + ((h->nplans * sizeof(struct djp_agg_plan) + 4095) & ~4095ull);
	memcpy(t->plan, t->base + h->plans_offset, h->nplans * sizeof(struct djp_agg_plan));
	for (unsigned i = 0; i < h->nplans; i++) {
		struct djp_agg_plan *p = &t->plan[i];
		uint64_t stride;
		if (p->nbuckets > DJP_AGG_MAX_BUCKETS || djp_agg_nkey(p) > DJP_AGG_MAX_KEY_ARGS ||
		    p->str_arg > 16 || (p->str_arg && (p->str_bound < 8 || p->str_bound > DJP_AGG_MAX_STR ||
						       p->str_bound % 8 || !(p->key_args >> (p->str_arg - 1) & 1))) ||
		    p->entry_words != djp_agg_entry_words(p) || !djp_agg_names_ok(p) || !djp_agg_codes_ok(p))
			return false;
		if (p->hist_kind == DJP_AGG_HIST_LINEAR && p->hist_interval <= 0)
			return false;
		stride = djp_agg_table_stride(p, h->capacity);
		if (p->table_offset != off || p->table_stride != stride)
			return false;
		off += stride * h->nslots;
	}
	return off == h->total_size;
}

struct djp_tables *djp_tables_open(int fd)
{
	struct djp_tables *t = calloc(1, sizeof(*t));
	struct stat st;
	void *base;

	if (!t)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)DJP_TABLES_HDR_SIZE) {
		free(t);
		errno = EINVAL;
		return NULL;
	}
	base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		int err = errno;
		free(t);
		errno = err;
		return NULL;
	}
	t->base = base;
	t->size = (size_t)st.st_size;
	memcpy(&t->h, base, sizeof(t->h));
	if (!geometry_ok(t) ||
	    !(t->shadow = calloc((size_t)t->h.nplans * t->h.nslots + 1, sizeof(*t->shadow)))) {
		int err = t->shadow ? ENOMEM : EINVAL;
		munmap(base, t->size);
		free(t);
		errno = err;
		return NULL;
	}
	return t;
}

void djp_tables_close(struct djp_tables *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < (size_t)t->h.nplans * t->h.nslots; i++)
		free(t->shadow[i].w);
	free(t->shadow);
	munmap(t->base, t->size);
	free(t);
}

uint64_t djp_tables_lost(const struct djp_tables *t, uint32_t id)
{
	if (!t || id >= t->h.nids)
		return 0;
	return __atomic_load_n((const uint64_t *)(t->base + t->h.lost_offset) + id, __ATOMIC_RELAXED);
}

unsigned djp_tables_nplans(const struct djp_tables *t)
{
	return t ? t->h.nplans : 0;
}

static const uint8_t *table_at(const struct djp_tables *t, unsigned p, unsigned slot)
{
	return t->base + t->plan[p].table_offset + (uint64_t)slot * t->plan[p].table_stride;
}

uint64_t djp_tables_plan_lost(const struct djp_tables *t, unsigned p, unsigned nslots)
{
	uint64_t lost = 0;
	if (!t || p >= t->h.nplans)
		return 0;
	for (unsigned s = 0; s < t->h.nslots && s < nslots; s++)
		lost += __atomic_load_n(&((const struct djp_agg_table_hdr *)table_at(t, p, s))->lost, __ATOMIC_RELAXED);
	return lost;
}

/* Plan p's table of slot s: what its entries gained. */
static void read_table(struct djp_tables *t, unsigned p, unsigned s, djp_agg_delta_fn fn, void *ctx)
{
	const struct djp_agg_plan *pl = &t->plan[p];
	const uint8_t *tb = table_at(t, p, s);
	const uint64_t *ents = (const uint64_t *)(tb + djp_agg_entries_off(pl, t->h.capacity));
	struct shadow *sh = &t->shadow[(size_t)p * t->h.nslots + s];
	unsigned nw = 4 + pl->nbuckets, nkey = djp_agg_nkey(pl);
	uint64_t used = __atomic_load_n(&((const struct djp_agg_table_hdr *)tb)->used, __ATOMIC_ACQUIRE);
	int64_t hist[DJP_AGG_MAX_BUCKETS];
	uint64_t key[DJP_AGG_MAX_KEY_ARGS];
	char text[DJP_AGG_MAX_STR];
	unsigned str_at = DJP_AGG_ENTRY_FIXED + pl->nbuckets;

	if (used > t->h.capacity)
		used = t->h.capacity;
	if (used > sh->n) {
		uint64_t *w = realloc(sh->w, used * nw * sizeof(*w));
		if (!w)
			return;
		memset(w + (size_t)sh->n * nw, 0, (used - sh->n) * nw * sizeof(*w));
		sh->w = w;
		sh->n = (uint32_t)used;
	}
	for (uint64_t i = 0; i < used; i++) {
		const uint64_t *e = ents + i * pl->entry_words;
		uint64_t *old = sh->w + i * nw;
		uint64_t count = __atomic_load_n(&e[6], __ATOMIC_ACQUIRE);
		uint64_t sum, lo, hi;
		struct djp_agg_delta d;
		if (count == old[0])
			continue;
		sum = __atomic_load_n(&e[7], __ATOMIC_RELAXED);
		lo = __atomic_load_n(&e[10], __ATOMIC_RELAXED);
		hi = __atomic_load_n(&e[11], __ATOMIC_RELAXED);
		for (unsigned k = 0; k < nkey; k++)
			key[k] = e[2 + k];
		d = (struct djp_agg_delta){ .plan = p,
					    .id = (uint32_t)e[1],
					    .tid = (uint32_t)(e[1] >> 32),
					    .key = key,
					    .nkey = nkey,
					    .count = count - old[0],
					    .sum = (int64_t)(sum - old[1]),
					    .min = (int64_t)__atomic_load_n(&e[8], __ATOMIC_RELAXED),
					    .max = (int64_t)__atomic_load_n(&e[9], __ATOMIC_RELAXED),
					    .sumsq = (__int128)(((unsigned __int128)hi << 64 | lo) -
								((unsigned __int128)old[3] << 64 | old[2])),
					    .hist = pl->nbuckets ? hist : NULL,
					    .nbuckets = pl->nbuckets };
		if (pl->str_arg) { /* the text, NUL-terminated whatever the writer left */
			memcpy(text, &e[str_at + 2], pl->str_bound);
			text[pl->str_bound - 1] = 0;
			d.str = text;
			d.str_ptr = e[str_at];
			d.str_bits = e[str_at + 1] & ~0xffffffffull;
		}
		for (unsigned b = 0; b < pl->nbuckets; b++) {
			uint64_t v = __atomic_load_n(&e[DJP_AGG_ENTRY_FIXED + b], __ATOMIC_RELAXED);
			hist[b] = (int64_t)(v - old[4 + b]);
			old[4 + b] = v;
		}
		old[0] = count;
		old[1] = sum;
		old[2] = lo;
		old[3] = hi;
		fn(ctx, &d);
	}
}

void djp_tables_read(struct djp_tables *t, unsigned nslots, djp_agg_delta_fn fn, void *ctx)
{
	if (!t)
		return;
	for (unsigned p = 0; p < t->h.nplans; p++)
		for (unsigned s = 0; s < t->h.nslots && s < nslots; s++)
			read_table(t, p, s, fn, ctx);
}
