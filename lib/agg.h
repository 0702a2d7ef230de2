/*
 * The tables region: per-marker lost-event counters and the per-thread
 * aggregation tables of a script's probes, in one shared memfd beside the
 * rings (kernel/trace/agg.c has the essay on the producer side,
 * tools/djp/agg_tables.c on the reader's).
 *
 * Layout (little-endian, offsets in bytes):
 *
 *   [0, 4096)                 struct djp_tables_hdr
 *   [lost_offset)             u64 lost[nids]: events of marker id i the ring
 *                             dropped (full, nested, no slot)
 *   [plans_offset)            struct djp_agg_plan[nplans]
 *   [plan.table_offset + s * plan.table_stride)
 *                             the table of plan p for ring slot s: a
 *                             struct djp_agg_table_hdr, the writer's
 *                             scratch and index, then capacity entries of
 *                             plan.entry_words words (djp_agg_table_stride)
 *
 * An entry:
 *
 *   u64 tag       0: empty; else the key's hash | 1, stored last (release)
 *   u64 id_tid    marker id | tid << 32 (tid 0 unless the key has it)
 *   u64 key[4]    the key's argument words, in the order of key_args' bits
 *   u64 count, sum, min, max, sumsq_lo, sumsq_hi
 *   u64 hist[nbuckets]   with a histogram only, stap's buckets (stats.c)
 *   u64 str_ptr, str_desc, text[str_bound / 8]
 *                 with a string key only (str_arg): the first hit's
 *                 pointer, the copy's length and DJP_STR_* bits (lib/
 *                 ring.h), and the text, NUL-terminated; the key word of
 *                 that argument is the text's hash
 *
 * One writer per table (the thread that owns ring slot s), plain stores of
 * whole words; a reader merges tables by difference with what it read
 * before, so a table is never reset and a slot's next thread goes on in it.
 */
#ifndef DJP_LIB_AGG_H
#define DJP_LIB_AGG_H

#include <stdint.h>

#define DJP_TABLES_MAGIC 0x3142415450524a44ull /* "DJPRTAB1" */
#define DJP_TABLES_VERSION 1u
#define DJP_TABLES_HDR_SIZE 4096u
/* lost counters: marker ids below this (the recorder's table size) */
#define DJP_TABLES_NIDS 65536u
#define DJP_AGG_MAX_PLANS 32u
#define DJP_AGG_MAX_KEY_ARGS 4u
#define DJP_AGG_MAX_BUCKETS 130u
#define DJP_AGG_MAX_CAPACITY 65536u
#define DJP_AGG_ENTRY_FIXED 12u /* words before the buckets */

/* plan flags */
#define DJP_AGG_TID 1u	    /* the thread id is part of the key */
#define DJP_AGG_VALUE_ARG 2u /* the value is argument value_arg, else value_const */

enum { DJP_AGG_HIST_NONE = 0, DJP_AGG_HIST_LOG = 1, DJP_AGG_HIST_LINEAR = 2 };

/* What the tool asks for one probe: its key and its value.  The agent
 * fills the geometry (table_offset on). */
struct djp_agg_plan {
	uint32_t key_args;  /* bit i: argument i is part of the key (at most 4 bits) */
	uint32_t flags;	    /* DJP_AGG_* */
	uint32_t value_arg; /* with DJP_AGG_VALUE_ARG */
	uint32_t hist_kind; /* DJP_AGG_HIST_* */
	int64_t value_const;
	int64_t hist_start, hist_interval; /* linear */
	uint32_t nbuckets;		   /* 128 for log; linear: (stop - start) / interval + 2 */
	uint32_t str_arg;		   /* argument + 1 of the key read as a string, 0 none */
	uint32_t str_bound;		   /* its copy's bytes, NUL included: a multiple of 8 */
	uint32_t entry_words;
	uint32_t pad;
	uint64_t table_offset;
	uint64_t table_stride;
	uint64_t lost_noslot; /* hits dropped because no ring slot was free */
};

struct djp_agg_table_hdr {
	uint64_t lost; /* hits dropped because the table was full */
	uint64_t used; /* entries in use */
	uint64_t pad[6];
};

struct djp_tables_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint32_t nids;
	uint32_t nplans;
	uint32_t nslots;
	uint32_t capacity; /* entries per table, a power of two */
	uint64_t lost_offset;
	uint64_t plans_offset;
	uint64_t total_size;
};

#define DJP_AGG_MAX_STR 1024u

static inline uint32_t djp_agg_entry_words(const struct djp_agg_plan *p)
{
	return DJP_AGG_ENTRY_FIXED + p->nbuckets + (p->str_arg ? 2 + p->str_bound / 8 : 0);
}

/* A table: its header, the writer's scratch copy of a string key, the
 * writer's index (u32 entry + 1 by hash, twice the capacity), the
 * entries; page-rounded. */
static inline uint64_t djp_agg_index_off(const struct djp_agg_plan *p)
{
	return sizeof(struct djp_agg_table_hdr) + (p->str_arg ? p->str_bound : 0);
}

static inline uint64_t djp_agg_entries_off(const struct djp_agg_plan *p, uint32_t cap)
{
	return djp_agg_index_off(p) + (uint64_t)cap * 2 * sizeof(uint32_t);
}

static inline uint64_t djp_agg_table_stride(const struct djp_agg_plan *p, uint32_t cap)
{
	return (djp_agg_entries_off(p, cap) + (uint64_t)cap * djp_agg_entry_words(p) * 8 + 4095) & ~4095ull;
}

/* The hash of a copied string: the key word of a string argument. */
static inline uint64_t djp_agg_str_hash(const char *s, uint64_t desc)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (desc >> 32);
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* The key's hash, as both sides compute it: tag = hash | 1. */
static inline uint64_t djp_agg_hash(uint64_t id_tid, const uint64_t *key, unsigned nkey)
{
	uint64_t h = id_tid * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < nkey; i++)
		h = (h ^ key[i] ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
	return (h ^ (h >> 32)) | 1;
}

/* stap's histogram bucket of v (tools/djp/script/run/stats.c does the same). */
static inline uint32_t djp_agg_bucket(const struct djp_agg_plan *p, int64_t v)
{
	if (p->hist_kind == DJP_AGG_HIST_LOG) {
		uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
		int bits = u ? 64 - __builtin_clzll(u) : 0;
		if (v == 0)
			return 64;
		if (v > 0)
			return 64 + bits > 127 ? 127 : (uint32_t)(64 + bits);
		return 64 - bits < 0 ? 0 : (uint32_t)(64 - bits);
	} else {
		uint64_t q, last = (uint64_t)p->nbuckets - 1;
		if (v < p->hist_start)
			return 0;
		q = ((uint64_t)v - (uint64_t)p->hist_start) / (uint64_t)p->hist_interval + 1;
		return (uint32_t)(q > last ? last : q);
	}
}

#endif
