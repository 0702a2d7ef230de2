/*
 * The tables region: per-marker lost-event counters and the per-thread
 * aggregation tables of a script's probes, in one shared memfd beside the
 * rings (kernel/agent/agg.c has the essay on the producer side,
 * tools/djp/session/agg_tables.c on the reader's).
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
 *   u64 key[4]    the key's argument words, in the order of key_args' bits,
 *                 then the computed indexes (DJP_AGG_KEY_CODE), then the
 *                 CPU with DJP_AGG_CPU
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

#include <stdbool.h>
#include <stdint.h>

#define DJP_TABLES_MAGIC 0x3142415450524a44ull /* "DJPRTAB1" */
#define DJP_TABLES_VERSION 2u
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
/* The plan's arguments are named: its argument i is the site's context
 * variable names[i] ("fd", "return", "arg2"), wherever each site has it
 * (function and statement points, whose sites are made at connect, each
 * with the parameters and variables its DWARF places there); a site
 * without it gives 0.  key_args, value_arg and str_arg count in names. */
#define DJP_AGG_NAMED 4u
#define DJP_AGG_MAX_NAMES (DJP_AGG_MAX_KEY_ARGS + 1)
#define DJP_AGG_NAME_MAX 32u
/* The value is computed from the hit's arguments (value_code), and the
 * hit counts only when cond_code gives non-zero (DJP_AGG_COND): a stap
 * expression of +, -, *, &, |, ^, <<, >>, comparisons, &&, ||, !, ~ and
 * unary - on arguments and constants, as a stack program. */
#define DJP_AGG_VALUE_CODE 8u
#define DJP_AGG_COND 16u
/* The CPU of the hit is part of the key: its last word, after the
 * arguments' (so key_args has three bits at most). */
#define DJP_AGG_CPU 32u
/* Indexes that are expressions of the hit's arguments (`c[$fd & 7]`)
 * are computed in the target, each a key word (key_code[nkeycode]) after
 * the arguments' and before the CPU: the key is what the index is, not
 * the arguments it is computed from. */
#define DJP_AGG_KEY_CODE 64u

#define DJP_AGG_MAX_CODE 32u
#define DJP_AGG_MAX_IMM 4u
#define DJP_AGG_MAX_STACK 8u

enum djp_agg_op {
	DJP_AGG_OP_END,
	DJP_AGG_OP_ARG, /* push argument op[pc + 1] */
	DJP_AGG_OP_IMM, /* push imm[op[pc + 1]] */
	DJP_AGG_OP_NEG,
	DJP_AGG_OP_BITNOT,
	DJP_AGG_OP_NOT,
	/* binary: b popped, a replaced by a OP b */
	DJP_AGG_OP_ADD,
	DJP_AGG_OP_SUB,
	DJP_AGG_OP_MUL,
	DJP_AGG_OP_AND,
	DJP_AGG_OP_OR,
	DJP_AGG_OP_XOR,
	DJP_AGG_OP_SHL, /* counts & 63, as the script's interpreter */
	DJP_AGG_OP_SHR,
	DJP_AGG_OP_LT,
	DJP_AGG_OP_LE,
	DJP_AGG_OP_GT,
	DJP_AGG_OP_GE,
	DJP_AGG_OP_EQ,
	DJP_AGG_OP_NE,
	DJP_AGG_OP_LAND,
	DJP_AGG_OP_LOR,
	DJP_AGG_OP_COUNT
};

struct djp_agg_code {
	uint8_t op[DJP_AGG_MAX_CODE];
	int64_t imm[DJP_AGG_MAX_IMM];
};

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
	char names[DJP_AGG_MAX_NAMES][DJP_AGG_NAME_MAX]; /* DJP_AGG_NAMED: NUL-terminated */
	/* DJP_AGG_VALUE_CODE, DJP_AGG_COND: the programs, and the arguments
	 * they read (bit i: argument i), which the hit fetches */
	uint32_t code_args;
	uint32_t nkeycode; /* DJP_AGG_KEY_CODE: computed indexes */
	struct djp_agg_code value_code, cond_code;
	struct djp_agg_code key_code[DJP_AGG_MAX_KEY_ARGS];
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

/* A named plan's names (DJP_AGG_NAMED): every one its key, value or
 * string reads is there, NUL-terminated, and nothing counts past them. */
static inline bool djp_agg_names_ok(const struct djp_agg_plan *p)
{
	uint32_t used = p->key_args | p->code_args | (p->flags & DJP_AGG_VALUE_ARG ? 1u << p->value_arg : 0);

	if (!(p->flags & DJP_AGG_NAMED))
		return true;
	if (used >> DJP_AGG_MAX_NAMES || p->value_arg >= DJP_AGG_MAX_NAMES || p->str_arg > DJP_AGG_MAX_NAMES)
		return false;
	for (unsigned i = 0; i < DJP_AGG_MAX_NAMES; i++) {
		unsigned n = 0;
		while (n < DJP_AGG_NAME_MAX && p->names[i][n])
			n++;
		if (n == DJP_AGG_NAME_MAX || (!n && (used >> i & 1)))
			return false;
	}
	return true;
}

/* A program that reads only arguments below nargs, all of them in
 * `args`, keeps its stack within DJP_AGG_MAX_STACK and leaves one value. */
static inline bool djp_agg_code_ok(const struct djp_agg_code *c, unsigned nargs, uint32_t args)
{
	unsigned sp = 0;

	for (unsigned pc = 0; pc < DJP_AGG_MAX_CODE; pc++) {
		unsigned op = c->op[pc];
		if (op == DJP_AGG_OP_END)
			return sp == 1;
		if (op >= DJP_AGG_OP_COUNT)
			return false;
		if (op == DJP_AGG_OP_ARG || op == DJP_AGG_OP_IMM) {
			unsigned i = ++pc < DJP_AGG_MAX_CODE ? c->op[pc] : ~0u;
			if (op == DJP_AGG_OP_ARG ? i >= nargs || i >= 32 || !(args >> i & 1) : i >= DJP_AGG_MAX_IMM)
				return false;
			if (++sp > DJP_AGG_MAX_STACK)
				return false;
		} else if (op <= DJP_AGG_OP_NOT ? sp < 1 : sp-- < 2) {
			return false;
		}
	}
	return false;
}

/* The value of a program djp_agg_code_ok accepted, over the arguments. */
static inline int64_t djp_agg_eval(const struct djp_agg_code *c, const uint64_t *args)
{
	int64_t st[DJP_AGG_MAX_STACK];
	unsigned sp = 0;

	for (unsigned pc = 0; pc < DJP_AGG_MAX_CODE; pc++) {
		unsigned op = c->op[pc];
		int64_t a, b;
		switch (op) {
		case DJP_AGG_OP_END:
			return sp ? st[sp - 1] : 0;
		case DJP_AGG_OP_ARG:
			st[sp++] = (int64_t)args[c->op[++pc]];
			continue;
		case DJP_AGG_OP_IMM:
			st[sp++] = c->imm[c->op[++pc]];
			continue;
		case DJP_AGG_OP_NEG:
			st[sp - 1] = (int64_t)(0 - (uint64_t)st[sp - 1]);
			continue;
		case DJP_AGG_OP_BITNOT:
			st[sp - 1] = ~st[sp - 1];
			continue;
		case DJP_AGG_OP_NOT:
			st[sp - 1] = !st[sp - 1];
			continue;
		}
		b = st[--sp];
		a = st[sp - 1];
		switch (op) {
		case DJP_AGG_OP_ADD: a = (int64_t)((uint64_t)a + (uint64_t)b); break;
		case DJP_AGG_OP_SUB: a = (int64_t)((uint64_t)a - (uint64_t)b); break;
		case DJP_AGG_OP_MUL: a = (int64_t)((uint64_t)a * (uint64_t)b); break;
		case DJP_AGG_OP_AND: a &= b; break;
		case DJP_AGG_OP_OR: a |= b; break;
		case DJP_AGG_OP_XOR: a ^= b; break;
		case DJP_AGG_OP_SHL: a = (int64_t)((uint64_t)a << (b & 63)); break;
		case DJP_AGG_OP_SHR: a >>= (b & 63); break;
		case DJP_AGG_OP_LT: a = a < b; break;
		case DJP_AGG_OP_LE: a = a <= b; break;
		case DJP_AGG_OP_GT: a = a > b; break;
		case DJP_AGG_OP_GE: a = a >= b; break;
		case DJP_AGG_OP_EQ: a = a == b; break;
		case DJP_AGG_OP_NE: a = a != b; break;
		case DJP_AGG_OP_LAND: a = a && b; break;
		default: a = a || b; break;
		}
		st[sp - 1] = a;
	}
	return sp ? st[sp - 1] : 0;
}

/* A plan's programs (DJP_AGG_VALUE_CODE, DJP_AGG_COND), over the
 * arguments a plan may have. */
static inline bool djp_agg_codes_ok(const struct djp_agg_plan *p)
{
	unsigned nargs = p->flags & DJP_AGG_NAMED ? DJP_AGG_MAX_NAMES : 16;

	if (p->code_args >> nargs || ((p->flags & DJP_AGG_VALUE_CODE) && (p->flags & DJP_AGG_VALUE_ARG)))
		return false;
	if ((p->flags & DJP_AGG_VALUE_CODE) && !djp_agg_code_ok(&p->value_code, nargs, p->code_args))
		return false;
	if ((p->flags & DJP_AGG_COND) && !djp_agg_code_ok(&p->cond_code, nargs, p->code_args))
		return false;
	if (p->nkeycode > DJP_AGG_MAX_KEY_ARGS || (p->nkeycode != 0) != !!(p->flags & DJP_AGG_KEY_CODE))
		return false;
	for (unsigned i = 0; i < p->nkeycode; i++)
		if (!djp_agg_code_ok(&p->key_code[i], nargs, p->code_args))
			return false;
	return (p->flags & (DJP_AGG_VALUE_CODE | DJP_AGG_COND | DJP_AGG_KEY_CODE)) || !p->code_args;
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

/* The key words of an entry of plan p. */
static inline unsigned djp_agg_nkey(const struct djp_agg_plan *p)
{
	return (unsigned)__builtin_popcount(p->key_args) + p->nkeycode + !!(p->flags & DJP_AGG_CPU);
}

/* The arguments a hit of plan p fetches. */
static inline uint32_t djp_agg_wanted(const struct djp_agg_plan *p)
{
	return p->key_args | p->code_args | (p->flags & DJP_AGG_VALUE_ARG ? 1u << p->value_arg : 0);
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
