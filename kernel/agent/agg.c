/*
 * Aggregation where the probe fires, as bpftrace's maps and SystemTap's
 * per-CPU statistics do it: a script probe that only counts, sums or
 * feeds statistics (`n++`, `c[tid()]++`, `s[ppfunc()] <<< $arg2`) ships
 * no event per hit.  The tool compiles each such probe into a plan (lib/
 * agg.h): which argument words and whether the thread id make its key,
 * which argument (or constant) is its value, and the histogram its
 * statistic prints.  The agent makes one tables region per session, a
 * memfd the tool maps, with a table per plan per ring slot, and connects
 * this handler to the plan's markers in place of the recorder.
 *
 * At a hit the handler finds the thread's ring slot (claimed as the
 * recorder claims it, lib/ring.c, so a table has one writer: the thread
 * that owns the slot), hashes {marker id, tid if wanted, key words}, finds
 * or appends the entry and adds the value: count, sum, min, max, the sum
 * of squares (128 bits, for @variance) and the histogram bucket.  No lock,
 * no atomic read-modify-write, no system call: plain stores of whole
 * words, the count last with release, so a reader that loads the count
 * first sees every hit up to it.  Entries are appended in order and found
 * through an index of the writer's own (entry + 1 by hash, open
 * addressing), so a reader scans the `used` entries and nothing else.
 *
 * A table is never reset: a slot recycled for another thread goes on in
 * the same table, and the reader merges by difference with what it read
 * last, so threads that exit lose nothing.  A full table (capacity
 * entries, three quarters of its index) counts the hit in the table's
 * `lost`, which the tool reports with the probe; a thread that gets no
 * ring slot is counted by the ring's lost_noslot.  Never silent.
 *
 * Named arguments.  A marker's plan reads its arguments by index, the
 * same in every marker of the probe, which the tool knows from the
 * markers before it connects.  A function or statement point's sites are
 * made when it is connected, each with the parameters and variables the
 * DWARF places at its address (kernel/points.c), so `$fd` may be the
 * first argument of one function, the third of another, and `$return`
 * is whatever comes after a function's parameters.  Such a plan names
 * its arguments instead (DJP_AGG_NAMED, lib/agg.h), and each site's
 * indexes of those names are found from its format at its first hit, by
 * the rule lib/format.c names fields with, and kept per site id (ids are
 * never reused): a load a hit after that.  The hit then goes on as a
 * marker's, with the named arguments in the plan's order.  A site whose
 * trampoline prefetches the arguments gets its map when its list is
 * sealed, and the fast entry (agg_fast_named) only reorders them.
 *
 * Values and conditions.  A value that is an expression of the hit's
 * arguments (`s <<< $return - $v`), and a condition on them that the
 * whole probe body waits on (`if ($return < 0) ...`), come as small
 * stack programs (lib/agg.h), checked once when the tables are made (a
 * bounded stack, only the arguments the plan fetches) and run at the hit
 * before anything is stored: a hit the condition refuses costs the
 * arguments' loads and the program.  An index that is such an expression
 * (`c[$fd & 7]`) is a key word computed the same way, so that a table
 * holds one entry per index, not per argument value.  cpu() as an index is the hit's CPU
 * as the recorder reads it (sched_getcpu: the rseq area's word), a key
 * word after the arguments'.
 *
 * The region also carries the per-marker lost counters (lost[id]): the
 * recorder counts there the events its rings drop, so the tool reads them
 * even after the process is gone.
 *
 * Like the recorder, this runs from the lean trampoline (DJP_GPR_ONLY)
 * and is compiled for general registers only.
 */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/hit_args.h"
#include "kernel/agent/agg.h"
#include "lib/format.h"

/* Entry i's words of a table at t. */
static inline uint64_t *entry_at(uint8_t *t, const struct djp_agg_plan *p, uint32_t cap, uint32_t i)
{
	return (uint64_t *)(t + djp_agg_entries_off(p, cap)) + (uint64_t)i * p->entry_words;
}

/* The words of an entry before its string key's (lib/agg.h). */
static inline uint32_t str_at(const struct djp_agg_plan *p)
{
	return DJP_AGG_ENTRY_FIXED + p->nbuckets;
}

/* No libc in here (the essay): a plain comparison of two NUL-terminated
 * texts. */
static inline bool same_text(const char *a, const char *b)
{
	for (; *a == *b; a++, b++)
		if (!*a)
			return true;
	return false;
}

/* The thread's ring slot index, cached per thread. */
static __thread struct {
	const void *slot;
	uint32_t index;
} agg_slot __attribute__((tls_model("initial-exec")));

static inline void put(uint64_t *w, uint64_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELAXED);
}

/* One hit of plan ap at marker id, args[i] its argument i where the
 * plan reads it (nargs: how many the marker has). */
static inline __attribute__((always_inline)) void agg_update(struct djp_agg_probe *ap, uint32_t id,
							     const uint64_t *args, unsigned nargs)
{
	struct djp_agg *a = ap->agg;
	const struct djp_agg_plan *p = &a->plan[ap->plan];
	struct djp_ring_tls *t = &djp_ring_tls;
	struct djp_agg_table_hdr *th;
	uint64_t key[DJP_AGG_MAX_KEY_ARGS], id_tid, tag, *e, sum;
	uint32_t cap = a->capacity, mask = 2 * cap - 1, *index, used, n = 0, i;
	int64_t v;
	unsigned __int128 sq;
	uint8_t *tb;
	char *str = NULL;
	uint64_t str_ptr = 0, str_desc = 0;

	if ((p->flags & DJP_AGG_COND) && !djp_agg_eval(&p->cond_code, args))
		return; /* the probe's condition: not this hit */
	if (__builtin_expect(t->region_id != a->ring->id, 0)) {
		int err;
		if (t->nesting)
			return; /* cannot happen: the engine's guard keeps handlers apart */
		t->nesting = 1;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		err = djp__ring_attach(a->ring); /* a failure is counted in lost_noslot */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->nesting = 0;
		if (err)
			return;
	}
	if (__builtin_expect(agg_slot.slot != t->slot, 0)) {
		agg_slot.index = (uint32_t)(((uint8_t *)t->slot - a->ring->base - DJP_REGION_HDR_SIZE) /
					    a->ring->slot_stride);
		agg_slot.slot = t->slot;
	}
	if (agg_slot.index >= a->nslots)
		return;
	for (uint32_t bits = p->key_args; bits; bits &= bits - 1) {
		unsigned arg = (unsigned)__builtin_ctz(bits);
		key[n++] = arg < nargs ? args[arg] : 0;
	}
	for (uint32_t k = 0; k < p->nkeycode; k++) /* computed indexes */
		key[n++] = (uint64_t)djp_agg_eval(&p->key_code[k], args);
	if (p->flags & DJP_AGG_CPU) /* the rseq area's word, as the recorder's */
		key[n++] = (uint64_t)(int64_t)sched_getcpu();
	if (p->flags & DJP_AGG_VALUE_ARG)
		v = p->value_arg < nargs ? (int64_t)args[p->value_arg] : 0;
	else if (p->flags & DJP_AGG_VALUE_CODE)
		v = djp_agg_eval(&p->value_code, args);
	else
		v = p->value_const;
	id_tid = id | (p->flags & DJP_AGG_TID ? (uint64_t)t->tid << 32 : 0);
	tb = a->base + p->table_offset + (uint64_t)agg_slot.index * p->table_stride;
	th = (struct djp_agg_table_hdr *)tb;
	index = (uint32_t *)(tb + djp_agg_index_off(p));
	if (p->str_arg) {
		/* a string key: copied into the table's scratch (the ring's
		 * fault-safe copy), its word the text's hash */
		unsigned k = (unsigned)__builtin_popcount(p->key_args & ((1u << (p->str_arg - 1)) - 1));
		str = (char *)(th + 1);
		str_ptr = key[k];
		str_desc = djp_ring_copy_string(str, (const char *)(uintptr_t)str_ptr, p->str_bound);
		key[k] = djp_agg_str_hash(str, str_desc);
	}
	tag = djp_agg_hash(id_tid, key, n);

	i = (uint32_t)tag & mask;
	for (uint32_t probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
		uint32_t at = index[i];
		if (!at)
			break;
		/* `at` is read from shared memory: bounded before use */
		if (at > cap)
			continue;
		e = entry_at(tb, p, cap, at - 1);
		if (e[0] != tag || e[1] != id_tid)
			continue;
		for (uint32_t k = 0; k < n; k++)
			if (e[2 + k] != key[k])
				goto next;
		/* a string key: the text itself, not its hash alone */
		if (str && (e[str_at(p) + 1] != str_desc || !same_text((const char *)&e[str_at(p) + 2], str)))
			goto next;
		goto update;
next:;
	}
	/* a new entry, appended: its words, then `used` with release (the
	 * index has twice the entries' room, so a free place was found) */
	used = (uint32_t)th->used;
	if (used >= cap || index[i]) {
		put(&th->lost, th->lost + 1);
		return;
	}
	e = entry_at(tb, p, cap, used);
	put(&e[0], tag);
	put(&e[1], id_tid);
	for (uint32_t k = 0; k < DJP_AGG_MAX_KEY_ARGS; k++)
		put(&e[2 + k], k < n ? key[k] : 0);
	if (str) {
		uint32_t len = (uint32_t)(str_desc & 0xffff);
		char *text = (char *)&e[str_at(p) + 2];
		if (len >= p->str_bound)
			len = p->str_bound - 1;
		for (uint32_t c = 0; c < len; c++)
			text[c] = str[c];
		text[len] = 0;
		put(&e[str_at(p)], str_ptr);
		put(&e[str_at(p) + 1], str_desc);
	}
	index[i] = used + 1;
	__atomic_store_n(&th->used, used + 1, __ATOMIC_RELEASE);
update:
	sum = e[7] + (uint64_t)v;
	if (!e[6] || v < (int64_t)e[8])
		put(&e[8], (uint64_t)v);
	if (!e[6] || v > (int64_t)e[9])
		put(&e[9], (uint64_t)v);
	put(&e[7], sum);
	sq = ((unsigned __int128)e[11] << 64 | e[10]) + (unsigned __int128)((__int128)v * v);
	put(&e[10], (uint64_t)sq);
	put(&e[11], (uint64_t)(sq >> 64));
	if (p->hist_kind) {
		uint32_t b = djp_agg_bucket(p, v);
		if (b < p->nbuckets)
			put(&e[DJP_AGG_ENTRY_FIXED + b], e[DJP_AGG_ENTRY_FIXED + b] + 1);
	}
	__atomic_store_n(&e[6], e[6] + 1, __ATOMIC_RELEASE);
}

static inline bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The argument of m that `name` is, as the tool's ctx_field finds it: the
 * format's field of that name (the identifier right before "=%", as
 * lib/format.c reads it), else argN; -1 when m has none.  No libc here:
 * it runs at a hit (the essay). */
static int arg_named(const struct djp_marker_info *m, unsigned nargs, const char *name)
{
	const char *f = m->format ? m->format : "", *p = f;
	unsigned len = 0, k = 0, n = 0;

	while (name[len])
		len++;
	while (*p && k < nargs) {
		const char *pct = p;
		struct djp_fmt_spec sp;
		unsigned i = 0;
		if (*p++ != '%')
			continue;
		if (*p == '%') {
			p++;
			continue;
		}
		djp_format_spec(&p, &sp);
		if (!sp.conv)
			break;
		if ((unsigned)(pct - f) > len && pct[-1] == '=') {
			const char *at = pct - 1 - len;
			while (i < len && at[i] == name[i])
				i++;
			if (i == len && (at == f || !ident_char(at[-1])))
				return (int)k;
		}
		k++;
	}
	if (name[0] != 'a' || name[1] != 'r' || name[2] != 'g' || name[3] < '1' || name[3] > '9')
		return -1;
	for (const char *d = name + 3; *d; d++) {
		if (*d < '0' || *d > '9' || n > 1000)
			return -1;
		n = n * 10 + (unsigned)(*d - '0');
	}
	return n >= 1 && n <= nargs ? (int)n - 1 : -1;
}

/* Plan p's arguments at a site of marker m: argument i of the plan is the
 * site's (map >> 5 * i) & 31, 31 when it has none; bit 31 says known. */
static __attribute__((noinline, cold)) uint32_t names_map(const struct djp_agg_plan *p,
							  const struct djp_marker_info *m, unsigned nargs)
{
	uint32_t map = 1u << 31;
	for (unsigned i = 0; i < DJP_AGG_MAX_NAMES; i++) {
		int a = p->names[i][0] ? arg_named(m, nargs, p->names[i]) : -1;
		map |= (uint32_t)(a < 0 ? 31 : a) << (5 * i);
	}
	return map;
}

/* A named plan's hit (the essay): its arguments by name. */
static __attribute__((noinline)) void agg_hit_named(const struct djp_hit *hit, struct djp_agg_probe *ap,
						    const struct djp_site *s, unsigned nargs, uint32_t want)
{
	const struct djp_agg_plan *p = &ap->agg->plan[ap->plan];
	uint32_t *cache = ap->agg->argmap[ap->plan];
	uint32_t map = cache && s->id < DJP_TABLES_NIDS ? __atomic_load_n(&cache[s->id], __ATOMIC_RELAXED) : 0;
	uint64_t args[DJP_AGG_MAX_NAMES];

	if (__builtin_expect(!map, 0)) {
		map = names_map(p, s->m, nargs);
		if (cache && s->id < DJP_TABLES_NIDS) /* racing threads store the same */
			__atomic_store_n(&cache[s->id], map, __ATOMIC_RELAXED);
	}
	for (uint32_t bits = want; bits; bits &= bits - 1) {
		unsigned arg = (unsigned)__builtin_ctz(bits), at = map >> (5 * arg) & 31;
		args[arg] = at < nargs ? djp_arg_fetch(hit, s, &s->m->arg[at]) : 0;
	}
	agg_update(ap, s->id, args, DJP_AGG_MAX_NAMES);
}

void djp_agg_hit(const struct djp_hit *hit, void *data)
{
	struct djp_agg_probe *ap = data;
	const struct djp_agg_plan *p = &ap->agg->plan[ap->plan];
	const struct djp_site *s = djp__hit_site(hit);
	const struct djp_marker_info *m = s->m;
	unsigned nargs = m->nargs < DJP_MARKER_MAX_ARGS ? m->nargs : DJP_MARKER_MAX_ARGS;
	uint32_t want = djp_agg_wanted(p);
	uint64_t args[16];

	if (p->flags & DJP_AGG_NAMED) {
		agg_hit_named(hit, ap, s, nargs, want);
		return;
	}
	/* only the arguments the plan reads */
	for (uint32_t bits = want; bits; bits &= bits - 1) {
		unsigned arg = (unsigned)__builtin_ctz(bits);
		args[arg] = arg < nargs ? djp_arg_fetch(hit, s, &m->arg[arg]) : 0;
	}
	agg_update(ap, s->id, args, nargs);
}

/*
 * The fast entry (the recorder's essay has the mechanism): at a site this
 * plan's handler has to itself, whose first four arguments the lean
 * trampoline loads, when the plan reads none past them.  No site lookup,
 * no location decoding.
 */
static void agg_fast(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	const struct djp_fast_plan *fp = plan;
	const uint64_t args[4] = { a0, a1, a2, a3 };
	(void)hit;
	agg_update(fp->data, fp->id, args, fp->nargs);
}

/* A named plan's: the site's map of names (names_map) is made with the
 * plan, when the site's list is sealed, and the prefetched arguments are
 * put in the plan's order. */
static void agg_fast_named(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2,
			   uint64_t a3)
{
	const struct djp_fast_plan *fp = plan;
	const uint64_t pre[4] = { a0, a1, a2, a3 };
	uint64_t args[DJP_AGG_MAX_NAMES];
	(void)hit;
	for (unsigned i = 0; i < DJP_AGG_MAX_NAMES; i++) {
		unsigned at = (unsigned)(fp->aux >> (5 * i)) & 31;
		args[i] = at < fp->nargs ? pre[at] : 0;
	}
	agg_update(fp->data, fp->id, args, DJP_AGG_MAX_NAMES);
}

static djp_fast_entry_fn agg_plan_fast(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	struct djp_agg_probe *ap = data;
	const struct djp_agg_plan *p = &ap->agg->plan[ap->plan];
	const struct djp_marker_info *m = s->m;
	unsigned nargs = m->nargs < DJP_MARKER_MAX_ARGS ? m->nargs : DJP_MARKER_MAX_ARGS;
	uint32_t want = djp_agg_wanted(p), map = 0;

	if (!arch_tramp_prefetches(m->arg, m->nargs))
		return NULL;
	if (p->flags & DJP_AGG_NAMED) {
		/* every name it reads among the four prefetched, or none */
		map = names_map(p, m, nargs);
		for (uint32_t bits = want; bits; bits &= bits - 1) {
			unsigned at = map >> (5 * __builtin_ctz(bits)) & 31;
			if (at < nargs && at >= DJP_TRAMP_PREFETCH)
				return NULL;
		}
	} else if (want >> DJP_TRAMP_PREFETCH) {
		return NULL;
	}
	*plan = (struct djp_fast_plan){ .data = data,
					.id = s->id,
					.nargs = m->nargs < DJP_TRAMP_PREFETCH ? m->nargs : DJP_TRAMP_PREFETCH,
					.aux = map };
	return p->flags & DJP_AGG_NAMED ? agg_fast_named : agg_fast;
}

/* ---- set-up (not on the hit path) ---------------------------------------- */

static bool plan_ok(const struct djp_agg_plan *p)
{
	if (p->str_arg > 16 || (p->str_arg && (p->str_bound < 8 || p->str_bound > DJP_AGG_MAX_STR || p->str_bound % 8 ||
					       !(p->key_args >> (p->str_arg - 1) & 1))))
		return false;
	if (djp_agg_nkey(p) > DJP_AGG_MAX_KEY_ARGS || p->key_args >> 16 ||
	    (p->flags & ~(DJP_AGG_TID | DJP_AGG_VALUE_ARG | DJP_AGG_NAMED | DJP_AGG_VALUE_CODE | DJP_AGG_COND |
			  DJP_AGG_CPU | DJP_AGG_KEY_CODE)) ||
	    (p->flags & DJP_AGG_VALUE_ARG && p->value_arg >= 16) || !djp_agg_names_ok(p) || !djp_agg_codes_ok(p))
		return false;
	switch (p->hist_kind) {
	case DJP_AGG_HIST_NONE:
		return p->nbuckets == 0;
	case DJP_AGG_HIST_LOG:
		return p->nbuckets == 128;
	case DJP_AGG_HIST_LINEAR:
		return p->hist_interval > 0 && p->nbuckets >= 3 && p->nbuckets <= DJP_AGG_MAX_BUCKETS;
	default:
		return false;
	}
}

struct djp_agg *djp_agg_create(struct djp_recorder *rec, const struct djp_agg_plan *plans, unsigned nplans,
			       uint32_t capacity)
{
	struct djp_agg *a;
	uint64_t off, total;
	int err = EINVAL;

	if (nplans > DJP_AGG_MAX_PLANS || !capacity || capacity > DJP_AGG_MAX_CAPACITY || (capacity & (capacity - 1)))
		goto fail;
	for (unsigned i = 0; i < nplans; i++)
		if (!plan_ok(&plans[i]))
			goto fail;
	err = ENOMEM;
	if (!(a = calloc(1, sizeof(*a))))
		goto fail;
	a->ring = rec->region;
	a->nslots = rec->region->nslots;
	a->capacity = capacity;
	a->nplans = nplans;
	off = DJP_TABLES_HDR_SIZE + (uint64_t)DJP_TABLES_NIDS * 8;
	off += (nplans * sizeof(struct djp_agg_plan) + 4095) & ~4095ull;
	for (unsigned i = 0; i < nplans; i++) {
		struct djp_agg_plan *p = &a->plan[i];
		*p = plans[i];
		p->lost_noslot = 0;
		p->entry_words = djp_agg_entry_words(p);
		p->table_offset = off;
		p->table_stride = djp_agg_table_stride(p, capacity);
		off += p->table_stride * a->nslots;
		a->probe[i] = (struct djp_agg_probe){ a, i };
		/* a named plan's indexes per site id (untouched pages cost
		 * nothing) */
		if ((p->flags & DJP_AGG_NAMED) && !(a->argmap[i] = calloc(DJP_TABLES_NIDS, sizeof(uint32_t))))
			goto fail_free;
	}
	total = off;
	/* as the rings: no more than a tracer should map into a process
	 * (sparse: a table takes pages as its thread fills it) */
	if (total > DJP_AGG_MAX_REGION) {
		err = E2BIG;
		goto fail_free;
	}
	a->fd = memfd_create("djp-tables", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (a->fd < 0)
		goto fail_free;
	if (ftruncate(a->fd, (off_t)total) < 0 ||
	    fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail_fd;
	a->base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
	if (a->base == MAP_FAILED)
		goto fail_fd;
	a->size = total;
	a->hdr = (struct djp_tables_hdr *)a->base;
	a->hdr->version = DJP_TABLES_VERSION;
	a->hdr->hdr_size = sizeof(*a->hdr);
	a->hdr->nids = DJP_TABLES_NIDS;
	a->hdr->nplans = nplans;
	a->hdr->nslots = a->nslots;
	a->hdr->capacity = capacity;
	a->hdr->lost_offset = DJP_TABLES_HDR_SIZE;
	a->hdr->plans_offset = DJP_TABLES_HDR_SIZE + (uint64_t)DJP_TABLES_NIDS * 8;
	a->hdr->total_size = total;
	memcpy(a->base + a->hdr->plans_offset, a->plan, nplans * sizeof(struct djp_agg_plan));
	__atomic_store_n(&a->hdr->magic, DJP_TABLES_MAGIC, __ATOMIC_RELEASE);
	/* from now on the recorder counts lost events where the tool reads them */
	__atomic_store_n(&rec->lost_shared, (uint64_t *)(a->base + DJP_TABLES_HDR_SIZE), __ATOMIC_RELEASE);
	return a;
fail_fd:
	err = errno;
	close(a->fd);
fail_free:
	for (unsigned i = 0; i < nplans; i++)
		free(a->argmap[i]);
	free(a);
fail:
	errno = err;
	return NULL;
}

void djp_agg_destroy(struct djp_agg *a)
{
	if (!a)
		return;
	munmap(a->base, a->size);
	close(a->fd);
	for (unsigned i = 0; i < a->nplans; i++)
		free(a->argmap[i]);
	free(a);
}

int djp_agg_connect(struct djp_agg *a, unsigned plan, const char *pattern, unsigned flags, unsigned *nsites)
{
	/* once: two patterns of one plan that match one site count a hit once */
	struct djp_connect_opts o = { .plan = agg_plan_fast, .pending = flags & DJP_RECORD_PENDING, .once = true };
	unsigned how = DJP_GPR_ONLY | (flags & DJP_RECORD_INT3 ? DJP_FORCE_INT3 : 0);
	int id, err;

	if (plan >= a->nplans || (flags & ~(DJP_RECORD_PENDING | DJP_RECORD_INT3)))
		return -EINVAL;
	/* a plan that reads no argument (a count, keyed by probefunc() or
	 * nothing): points made for it skip their functions' DWARF */
	if (!djp_agg_wanted(&a->plan[plan]))
		how |= DJP_NO_ARGS;
	if (a->plan[plan].str_arg) /* the fast copy if the engine can have it */
		(void)djp_safe_copy_enable();
	/* function and statement points, as the recorder connects them:
	 * their sites are made now, and have the arguments DWARF gives
	 * unless the plan reads none */
	if ((err = djp__point_parse(pattern, &o.point)) < 0)
		return err;
	if (o.point)
		return djp__connect(NULL, djp_agg_hit, &a->probe[plan], how, &o);
	id = djp__connect(pattern, djp_agg_hit, &a->probe[plan], how, &o);
	if (id >= 0 && nsites)
		*nsites = djp_recorder_count_sites(pattern);
	return id;
}
