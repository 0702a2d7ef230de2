/*
 * Concurrency stress: 8 threads (more than the cores) run hot loops over 64
 * marker sites while a patcher thread connects and disconnects random
 * subsets of them, in batches, as fast as it can, with a random mix of
 * lean, full and int3 probes.
 *
 * The check is exact.  For each site the patcher keeps a word {generation,
 * cover}: cover is the number of probes that hold the site; the generation
 * is odd while a connect or disconnect touching the site is in progress and
 * even otherwise.  A thread reads the word, calls the site, reads it again:
 * if both reads are equal and even, no change was in flight during the call,
 * and the call must have produced exactly `cover` handler runs.  Any call
 * may produce at most the number of probes that exist.  Handlers check
 * their arguments too.
 *
 * Instruction probes (djp_connect_at) join in on 64 plain functions fn_AB
 * beside the marker sites, at their entry, at a statement in the middle
 * or at their return, under the same exact count: their handler checks
 * that the arguments are in %rdi and %rsi, where the call put them (at a
 * return, that %rax holds the result), and each function's result is
 * checked after every call, so a displaced instruction run wrong out of
 * line, or a diverted return that lost its way, shows.
 *
 * Functions with indirect jumps (selftests/indirect_asm.h: a computed-goto
 * interpreter and a switch table) join in too, probed in the middle of a
 * dispatch block and between two cases, under the same exact count; and
 * so do sites whose run starts before them (selftests/run_before_asm.h:
 * two bytes before a function's end, right after a branch target).
 *
 * usage: engine_stress SECONDS   (DJP_SYNC=shootdown for the TLB-shootdown sync)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "arch/x86/arch.h"
#include "selftests/indirect_asm.h"
#include "selftests/run_before_asm.h"

#define NSITES 64
#define NTHREADS 8
#define MAXPROBES 16

typedef void (*site_fn)(long t, long s);
#define SITE(a, b)                                                                                  \
	__attribute__((noinline)) static void site_##a##b(long t, long s)                           \
	{                                                                                           \
		MARK(stress_s##a##b, "t=%ld s=%ld", t, s);                                          \
		__asm__ volatile("" ::: "memory");                                                  \
	}
#define ROW(a) SITE(a, 0) SITE(a, 1) SITE(a, 2) SITE(a, 3) SITE(a, 4) SITE(a, 5) SITE(a, 6) SITE(a, 7)
ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7)
#define FN_ROW(a) site_##a##0, site_##a##1, site_##a##2, site_##a##3, site_##a##4, site_##a##5, site_##a##6, site_##a##7
static const site_fn sites[NSITES] = { FN_ROW(0), FN_ROW(1), FN_ROW(2), FN_ROW(3),
				       FN_ROW(4), FN_ROW(5), FN_ROW(6), FN_ROW(7) };

/* Plain functions for instruction probes: no marker, a rip-relative
 * read-modify-write first. */
static volatile long fn_sink[NSITES];
typedef long (*plain_fn)(long t, long s);
#define FN(a, b)                                                                                    \
	__attribute__((noinline)) long fn_##a##b(long t, long s)                                    \
	{                                                                                           \
		fn_sink[a * 8 + b] += t;                                                            \
		return t * 3 + s;                                                                   \
	}
#define FROW(a) FN(a, 0) FN(a, 1) FN(a, 2) FN(a, 3) FN(a, 4) FN(a, 5) FN(a, 6) FN(a, 7)
FROW(0) FROW(1) FROW(2) FROW(3) FROW(4) FROW(5) FROW(6) FROW(7)
#define PFN_ROW(a) fn_##a##0, fn_##a##1, fn_##a##2, fn_##a##3, fn_##a##4, fn_##a##5, fn_##a##6, fn_##a##7
static const plain_fn fns[NSITES] = { PFN_ROW(0), PFN_ROW(1), PFN_ROW(2), PFN_ROW(3),
				      PFN_ROW(4), PFN_ROW(5), PFN_ROW(6), PFN_ROW(7) };

static _Atomic uint64_t word[NSITES];  /* generation << 16 | cover */
static _Atomic uint64_t pword[NSITES]; /* the same for fns[] */
static __thread long tls_phits;
static unsigned char fn_text[NSITES][16]; /* each function's first bytes, before */
static uint64_t second_insn;		  /* the statement probes' offset */
static atomic_int stop;
static atomic_long bad, calls_checked, total_calls, total_hits;
static _Atomic uintptr_t site_addr[NSITES];
static __thread long tls_hits;
static __thread long tls_thread;

static void handler(const struct djp_hit *hit, void *data)
{
	(void)data;
	tls_hits++;
	if (djp_hit_arg(hit, 1) >= 0 && djp_hit_arg(hit, 1) < NSITES)
		atomic_store_explicit(&site_addr[djp_hit_arg(hit, 1)], djp_hit_site(hit), memory_order_relaxed);
	if (djp_hit_arg(hit, 0) != tls_thread || djp_hit_arg(hit, 1) < 0 || djp_hit_arg(hit, 1) >= NSITES) {
		atomic_fetch_add(&bad, 1);
		fprintf(stderr, "bad args %ld %ld\n", (long)djp_hit_arg(hit, 0), (long)djp_hit_arg(hit, 1));
	}
}

static void point_handler(const struct djp_hit *hit, void *data)
{
	(void)data;
	tls_phits++;
	if ((long)djp_hit_reg(hit, 5) != tls_thread || djp_hit_reg(hit, 4) >= NSITES) {
		atomic_fetch_add(&bad, 1);
		fprintf(stderr, "bad registers at %s: rdi %ld rsi %ld\n", djp_hit_name(hit), (long)djp_hit_reg(hit, 5),
			(long)djp_hit_reg(hit, 4));
	}
}

static void return_handler(const struct djp_hit *hit, void *data)
{
	unsigned long s = (unsigned long)djp_hit_reg(hit, 0) - (unsigned long)tls_thread * 3;
	(void)data;
	tls_phits++;
	if (s >= NSITES) {
		atomic_fetch_add(&bad, 1);
		fprintf(stderr, "bad return value at %s: rax %ld\n", djp_hit_name(hit), (long)djp_hit_reg(hit, 0));
	}
}

/* The interpreter runs op 0, and so ig_add_site, three times a call. */
static const unsigned char ig_prog[] = { 0, 1, 0, 4, 2, 3, 0, 5 };
#define NIND 4
static _Atomic uint64_t iword[NIND]; /* ig_add_site, sw_site, rb_end's site, rb_join's */
static __thread long tls_ihits[NIND];
static unsigned char ig_text[64], sw_text[64], rb_text[2][32];
static uintptr_t ind_site[NIND];

static void indirect_handler(const struct djp_hit *hit, void *data)
{
	(void)data;
	for (int k = 0; k < NIND; k++)
		tls_ihits[k] += djp_hit_site(hit) == ind_site[k];
}

/* A place in a function by its offset, the sum made where the compiler
 * cannot fold it into a rip-relative lea of the place (a code address
 * the program would hold: run_before_asm.h). */
static uintptr_t place(const void *fn, unsigned off)
{
	uintptr_t a = (uintptr_t)fn;
	__asm__("" : "+r"(a));
	return a + off;
}

/* One run of each, checked as the sites are. */
static void call_indirect(long t, long n, long *checked, long *hits)
{
	uint64_t a1 = atomic_load(&iword[0]), b1 = atomic_load(&iword[1]), a2, b2;
	long op = n % 6, x = t * 1000003 + n, r, q;
	uint64_t c1 = atomic_load(&iword[2]), d1 = atomic_load(&iword[3]), c2, d2;
	long e, j;
	tls_ihits[0] = tls_ihits[1] = tls_ihits[2] = tls_ihits[3] = 0;
	r = ig_run(ig_prog, x);
	q = sw_run(op, x);
	e = rb_end(x);
	j = rb_join(x, x >> 1);
	a2 = atomic_load(&iword[0]);
	b2 = atomic_load(&iword[1]);
	c2 = atomic_load(&iword[2]);
	d2 = atomic_load(&iword[3]);
	*hits += tls_ihits[0] + tls_ihits[1] + tls_ihits[2] + tls_ihits[3];
	if (r != ig_ref(ig_prog, x) || q != sw_ref(op, x)) {
		atomic_fetch_add(&bad, 1);
		fprintf(stderr, "ig_run %ld (not %ld), sw_run(%ld) %ld (not %ld)\n", r, ig_ref(ig_prog, x), op, q,
			sw_ref(op, x));
	}
	if (e != rb_end_ref(x) || j != rb_join_ref(x, x >> 1)) {
		atomic_fetch_add(&bad, 1);
		fprintf(stderr, "rb_end %ld (not %ld), rb_join %ld (not %ld)\n", e, rb_end_ref(x), j,
			rb_join_ref(x, x >> 1));
	}
	if (c1 == c2 && !((c1 >> 16) & 1)) {
		(*checked)++;
		if ((uint64_t)tls_ihits[2] != (c1 & 0xffff)) {
			atomic_fetch_add(&bad, 1);
			fprintf(stderr, "rb_end: %ld hits, %u probes armed throughout\n", tls_ihits[2],
				(unsigned)(c1 & 0xffff));
		}
	}
	if (d1 == d2 && !((d1 >> 16) & 1)) {
		(*checked)++;
		if ((uint64_t)tls_ihits[3] != (d1 & 0xffff)) {
			atomic_fetch_add(&bad, 1);
			fprintf(stderr, "rb_join: %ld hits, %u probes armed throughout\n", tls_ihits[3],
				(unsigned)(d1 & 0xffff));
		}
	}
	if (a1 == a2 && !((a1 >> 16) & 1)) {
		(*checked)++;
		if ((uint64_t)tls_ihits[0] != 3 * (a1 & 0xffff)) {
			atomic_fetch_add(&bad, 1);
			fprintf(stderr, "ig_add_site: %ld hits, %u probes armed throughout\n", tls_ihits[0],
				(unsigned)(a1 & 0xffff));
		}
	}
	if (b1 == b2 && !((b1 >> 16) & 1)) {
		(*checked)++;
		if ((uint64_t)tls_ihits[1] != (op == 1) * (b1 & 0xffff)) {
			atomic_fetch_add(&bad, 1);
			fprintf(stderr, "sw_site: %ld hits, %u probes armed throughout\n", tls_ihits[1],
				(unsigned)(b1 & 0xffff));
		}
	}
}

/* One call of plain function s, checked as the sites are. */
static void call_plain(long t, int s, long *checked, long *hits)
{
	uint64_t w1 = atomic_load(&pword[s]), w2;
	long r;
	tls_phits = 0;
	r = fns[s](t, s);
	w2 = atomic_load(&pword[s]);
	*hits += tls_phits;
	if (r != t * 3 + s) {
		atomic_fetch_add(&bad, 1);
		fprintf(stderr, "fn %d returned %ld, not %ld\n", s, r, t * 3 + s);
	}
	if (w1 == w2 && !((w1 >> 16) & 1)) {
		(*checked)++;
		if ((uint64_t)tls_phits != (w1 & 0xffff)) {
			atomic_fetch_add(&bad, 1);
			fprintf(stderr, "thread %ld fn %d: %ld hits, %u probes armed throughout\n", t, s, tls_phits,
				(unsigned)(w1 & 0xffff));
		}
	}
}

static void *worker(void *arg)
{
	long t = (long)arg, checked = 0, calls = 0, hits = 0;
	unsigned seed = (unsigned)t * 7919u;
	tls_thread = t;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int s = (int)(rand_r(&seed) % NSITES);
		uint64_t w1 = atomic_load(&word[s]), w2;
		tls_hits = 0;
		sites[s](t, s);
		w2 = atomic_load(&word[s]);
		call_plain(t, (s * 7 + (int)calls) % NSITES, &checked, &hits);
		call_indirect(t, calls, &checked, &hits);
		calls += 4;
		hits += tls_hits;
		if (tls_hits > MAXPROBES) {
			atomic_fetch_add(&bad, 1);
			fprintf(stderr, "site %d: %ld hits in one call\n", s, tls_hits);
		}
		if (w1 == w2 && !((w1 >> 16) & 1)) {
			checked++;
			if ((uint64_t)tls_hits != (w1 & 0xffff)) {
				atomic_fetch_add(&bad, 1);
				fprintf(stderr, "thread %ld site %d: %ld hits, %u probes armed throughout\n", t, s,
					tls_hits, (unsigned)(w1 & 0xffff));
			}
		}
	}
	atomic_fetch_add(&calls_checked, checked);
	atomic_fetch_add(&total_calls, calls);
	atomic_fetch_add(&total_hits, hits);
	return NULL;
}

/* Pattern PREFIX[A][B] with random non-empty sets A and B; marks in cov[]. */
static void random_pattern(unsigned *seed, const char *prefix, char *pat, int *cov)
{
	unsigned ma = 0, mb = 0;
	char *p = pat;
	while (!ma)
		ma = (unsigned)rand_r(seed) & 0xff;
	while (!mb)
		mb = (unsigned)rand_r(seed) & 0xff;
	p += sprintf(p, "%s[", prefix);
	for (int a = 0; a < 8; a++)
		if (ma & (1u << a))
			*p++ = (char)('0' + a);
	p += sprintf(p, "][");
	for (int b = 0; b < 8; b++)
		if (mb & (1u << b))
			*p++ = (char)('0' + b);
	strcpy(p, "]");
	for (int s = 0; s < NSITES; s++)
		cov[s] = (ma & (1u << (s / 8))) && (mb & (1u << (s % 8)));
}

static void bump(_Atomic uint64_t *w, const int *cov, int delta_cover)
{
	for (int s = 0; s < NSITES; s++)
		if (cov[s])
			atomic_fetch_add(&w[s], (1ull << 16) + (uint64_t)(int64_t)delta_cover);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	struct {
		int id;
		int cov[NSITES];
		_Atomic uint64_t *w; /* word (markers) or pword (points) */
	} probes[MAXPROBES];
	long point_batches = 0, return_batches = 0, indirect_batches = 0;
	int nprobes = 0;
	long batches = 0;
	pthread_t th[NTHREADS];
	unsigned seed = (unsigned)time(NULL);
	struct timespec t0, t;
	static const unsigned flagset[] = { DJP_GPR_ONLY, 0, DJP_FORCE_INT3, DJP_GPR_ONLY };

	for (int s = 0; s < NSITES; s++)
		memcpy(fn_text[s], (void *)fns[s], sizeof(fn_text[s]));
	memcpy(ig_text, (void *)ig_run, sizeof(ig_text));
	memcpy(sw_text, (void *)sw_run, sizeof(sw_text));
	memcpy(rb_text[0], (void *)rb_end, sizeof(rb_text[0]));
	memcpy(rb_text[1], (void *)rb_join, sizeof(rb_text[1]));
	ind_site[0] = (uintptr_t)ig_add_site;
	ind_site[1] = (uintptr_t)sw_site;
	ind_site[2] = place(rb_end, RB_END_SITE);
	ind_site[3] = place(rb_join, RB_JOIN_SITE);
	if (!rb_offsets_ok()) {
		fprintf(stderr, "run_before_asm.h's offsets are not its code's\n");
		return 1;
	}
	{
		/* every fn_AB has the same code: the statement probes go at the
		 * first instruction past what a jump at the entry covers (the
		 * shortest run of 5 bytes or more), so that neither is inside
		 * the other's jump */
		struct djp_insn in;
		while (second_insn < 5) {
			if (djp_insn_decode(fn_text[0] + second_insn, sizeof(fn_text[0]) - second_insn,
					    (uintptr_t)fns[0] + second_insn, &in) || !in.len) {
				fprintf(stderr, "cannot decode fn_00\n");
				return 1;
			}
			second_insn += in.len;
		}
	}
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (nprobes < MAXPROBES && (nprobes == 0 || rand_r(&seed) % 2)) {
			char pat[64];
			int *cov = probes[nprobes].cov, id;
			bool point = rand_r(&seed) % 3 == 0;
			bool indirect = !point && (rand_r(&seed) % 5 == 0 || !indirect_batches);
			int which = (int)(rand_r(&seed) % NIND);
			_Atomic uint64_t *w = probes[nprobes].w = indirect ? &iword[which] : point ? pword : word;
			random_pattern(&seed, point ? "fn_" : "stress_s", pat, cov);
			if (indirect) {
				memset(cov, 0, sizeof(probes[nprobes].cov));
				cov[0] = 1;
			}
			bump(w, cov, 0); /* odd: in flight */
			/* return, entry, statement in turn, so that a short run
			 * has each */
			unsigned where = (unsigned)((point_batches + 2) % 3);
			if (indirect)
				id = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts),
									 .addr = ind_site[which] },
						    indirect_handler, NULL, flagset[rand_r(&seed) % 4]);
			else if (point)
				/* the entry, a statement in the middle, or the return */
				id = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts),
									 .func = pat,
									 .offset = where == 1 ? second_insn : 0,
									 .retprobe = where == 2 },
						    where == 2 ? return_handler : point_handler, NULL,
						    flagset[rand_r(&seed) % 4]);
			else
				id = djp_connect(pat, handler, NULL, flagset[rand_r(&seed) % 4]);
			point_batches += point;
			indirect_batches += indirect;
			return_batches += point && where == 2;
			if (id < 0) {
				fprintf(stderr, "connect %s: %s\n", pat, strerror(-id));
				atomic_fetch_add(&bad, 1);
				bump(w, cov, 0);
				break;
			}
			bump(w, cov, 1); /* even again, one more probe */
			probes[nprobes++].id = id;
		} else {
			int k = (int)(rand_r(&seed) % (unsigned)nprobes), err;
			bump(probes[k].w, probes[k].cov, -1);
			err = djp_disconnect(probes[k].id);
			bump(probes[k].w, probes[k].cov, 0);
			if (err) {
				fprintf(stderr, "disconnect: %s\n", strerror(-err));
				atomic_fetch_add(&bad, 1);
				break;
			}
			probes[k] = probes[--nprobes];
		}
		batches++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	while (nprobes > 0) {
		int err;
		bump(probes[nprobes - 1].w, probes[nprobes - 1].cov, -1);
		if ((err = djp_disconnect(probes[--nprobes].id))) {
			fprintf(stderr, "final disconnect: %s\n", strerror(-err));
			atomic_fetch_add(&bad, 1);
		}
		bump(probes[nprobes].w, probes[nprobes].cov, 0);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	/* Every site that was ever hit holds its NOP again. */
	for (int s = 0; s < NSITES; s++) {
		static const unsigned char nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
		uintptr_t a = atomic_load(&site_addr[s]);
		if (a && memcmp((void *)a, nop6, 6)) {
			fprintf(stderr, "site %d not restored\n", s);
			atomic_fetch_add(&bad, 1);
		}
	}
	/* ... and every function its first bytes. */
	for (int s = 0; s < NSITES; s++)
		if (memcmp((void *)fns[s], fn_text[s], sizeof(fn_text[s]))) {
			fprintf(stderr, "fn %d not restored\n", s);
			atomic_fetch_add(&bad, 1);
		}
	if (memcmp((void *)ig_run, ig_text, sizeof(ig_text)) || memcmp((void *)sw_run, sw_text, sizeof(sw_text)) ||
	    memcmp((void *)rb_end, rb_text[0], sizeof(rb_text[0])) || memcmp((void *)rb_join, rb_text[1], sizeof(rb_text[1]))) {
		fprintf(stderr, "ig_run, sw_run, rb_end or rb_join not restored\n");
		atomic_fetch_add(&bad, 1);
	}
	printf("%s: %ld batches (%ld of instruction probes, %ld of them return probes, %ld in functions with "
	       "indirect jumps or runs before their sites), %ld calls, %ld hits, %ld calls checked exactly, %ld errors\n",
	       getenv("DJP_SYNC") ? getenv("DJP_SYNC") : "membarrier", batches, point_batches, return_batches,
	       indirect_batches,
	       atomic_load(&total_calls), atomic_load(&total_hits), atomic_load(&calls_checked), atomic_load(&bad));
	return atomic_load(&bad) || atomic_load(&calls_checked) < 1000 || batches < 10 || !point_batches || !return_batches ||
			       !indirect_batches ? 1 : 0;
}
