/*
 * What runs a checked script: its values, arrays and statistics, printf's
 * output, and the run's entry points.  This folder holds them:
 *
 *   run.c     probes on events          interp.c  expressions
 *   exec.c    statements                map.c     associative arrays
 *   stats.c   aggregates                hist.c    histogram printing
 *   print.c   printf formatting         ctx_vars.c $$parms and $$vars
 *   folded.c  print_folded()
 *
 * interp.h the interpreter's state, and builtins/ the built-in functions:
 * a row each in builtins.def, a function each in a file of its family.
 */
#ifndef DJP_SCRIPT_RUN_H
#define DJP_SCRIPT_RUN_H

#include "tools/djp/script/lang/lang.h"
#include "tools/djp/script/run/builtins/builtins.h"

union cell {
	int64_t n;
	const char *s;
};

/* stats.c */
struct script_stat {
	int64_t count, sum, min, max;
	__int128 sumsq; /* for @variance */
	int64_t hist[]; /* buckets, when the global has a histogram */
};
struct script_stat *stat_new(const struct hist_cfg *h);
void stat_add(struct script_stat *st, const struct hist_cfg *h, int64_t v);
int64_t hist_log_bucket(int64_t v);
int64_t stat_variance(const struct script_stat *st);

/* hist.c */
void hist_print(FILE *out, const struct hist_cfg *h, const struct script_stat *st);

/* map.c: an associative array (keys of MAXKEYS cells, order of insertion). */
struct map_ent {
	uint64_t hash;
	union cell key[MAXKEYS];
	union cell val;	 /* long or owned string; stat pointer below */
	struct script_stat *st;
	uint32_t strcap; /* capacity of val.s when a string */
	bool live;
};
struct map {
	int nkeys;
	uint8_t kty[MAXKEYS];
	uint8_t vty;
	const struct hist_cfg *hist;
	struct map_ent *ent; /* insertion order; dead entries until compaction */
	uint32_t nent, cap, nlive, maxentries;
	uint32_t *index;     /* open addressing: entry index + 1, 0 empty */
	int iterating;	     /* foreach loops walking it: no compaction */
	uint32_t mask;
	bool wrap;	     /* full: the oldest entry makes room (a%[N]) */
	uint32_t oldest;     /* no live entry before this one */
};
uint64_t key_hash(const struct map *m, const union cell *key);
uint64_t str_hash(const char *s);
uint64_t num_hash(uint64_t x);
struct map *map_new(int nkeys, const uint8_t *kty, uint8_t vty, const struct hist_cfg *h, uint32_t maxentries);
struct map_ent *map_find(struct map *m, const union cell *key, uint64_t hash);
/* find or insert; NULL when full (MAXMAPENTRIES) */
struct map_ent *map_get(struct map *m, const union cell *key, uint64_t hash);
void map_delete(struct map *m, struct map_ent *e);
void map_clear(struct map *m);
void map_set_str(struct map_ent *e, const char *s);
void map_free(struct map *m);

struct strbuf {
	char *p;
	size_t len, cap;
};
void sb_put(struct strbuf *b, const char *s, size_t n);
void sb_putc(struct strbuf *b, char c);
/* %m and %M read the target's memory through this: true when all n bytes
 * were read */
struct print_mem {
	bool (*read)(void *ctx, uint64_t addr, void *buf, size_t n);
	void *ctx;
	uint64_t fault; /* the address that could not be read */
};
/* false when a %m/%M address could not be read (mem->fault) */
bool print_format(struct strbuf *b, const struct print_fmt *pf, const union cell *args, struct print_mem *mem);
void print_number(struct strbuf *b, uint64_t num, int base, int width, int prec, unsigned flags);
void print_escaped(struct strbuf *b, const char *s);
/* One byte as stap escapes it (%#s, text_str): itself, a C escape, or
 * octal; writes at most 4 bytes, returns how many. */
size_t char_escaped(char c, char *out);

/* run.c */
struct run;
struct run_opts {
	FILE *out;
	bool bench;
};
/* Run begin probes, events and timers until exit() or the end of the
 * source, then end probes and the display of unread globals.  Returns the
 * number of run-time errors. */
int run_script(struct script *sc, struct djp_source *src, const struct run_opts *opts, uint64_t *nevents);
extern volatile int run_interrupted; /* set by SIGINT/SIGTERM: end the run */
/* agg.c's merge: the element lvalue lv (N_INDEX) names when the hit ev
 * runs b's probe, made if new (NULL for a scalar, N_VAR); false after a
 * run-time error (a full array), printed and counted as the probe's.
 * Index i is given[i] for each bit i of `given` (one the target
 * computed), not evaluated. */
bool run_agg_target(struct run *r, struct node *lv, const struct binding *b, const struct djp_ev *ev,
		    uint32_t given, const int64_t *vals, struct map_ent **e);

#endif
