/*
 * Associative arrays.
 *
 * Entries live in one array in insertion order (the order an unsorted
 * foreach visits, and the order stable sorts keep for ties), indexed by an
 * open-addressing table of entry numbers.  Each entry caches the full 64-bit
 * hash of its key, so a probe compares hashes before it compares keys, and a
 * key whose hash is known in advance (a marker's name for `c[$$name]`) is
 * found without hashing a string.  String keys are copied once, when the
 * entry is created; the common path of `c[k]++` on an existing key touches
 * no allocator.  Deleted entries stay as holes until they outnumber the live
 * ones, and are squeezed out only when no foreach is walking the array.
 * An array holds at most `maxentries` entries (MAXMAPENTRIES, or the size
 * given in its declaration), as in stap; a wrapping one (`global a%[N]`)
 * then drops its oldest entry for the new one.
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

uint64_t num_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

uint64_t key_hash(const struct map *m, const union cell *key)
{
	uint64_t h = 0;
	for (int i = 0; i < m->nkeys; i++)
		h = h * 31 + (m->kty[i] == TY_STR ? str_hash(key[i].s) : num_hash((uint64_t)key[i].n));
	return h;
}

struct map *map_new(int nkeys, const uint8_t *kty, uint8_t vty, const struct hist_cfg *h, uint32_t maxentries)
{
	struct map *m = calloc(1, sizeof(*m));
	if (!m)
		abort();
	m->nkeys = nkeys;
	memcpy(m->kty, kty, (size_t)nkeys);
	m->vty = vty;
	m->hist = h;
	m->maxentries = maxentries;
	return m;
}

static bool key_eq(const struct map *m, const union cell *a, const union cell *b)
{
	for (int i = 0; i < m->nkeys; i++) {
		if (m->kty[i] == TY_STR) {
			if (a[i].s != b[i].s && strcmp(a[i].s, b[i].s))
				return false;
		} else if (a[i].n != b[i].n) {
			return false;
		}
	}
	return true;
}

struct map_ent *map_find(struct map *m, const union cell *key, uint64_t hash)
{
	if (!m->index)
		return NULL;
	for (uint32_t i = (uint32_t)hash & m->mask;; i = (i + 1) & m->mask) {
		uint32_t e = m->index[i];
		if (!e)
			return NULL;
		struct map_ent *ent = &m->ent[e - 1];
		if (ent->hash == hash && ent->live && key_eq(m, ent->key, key))
			return ent;
	}
}

static void rebuild_index(struct map *m, uint32_t slots)
{
	free(m->index);
	m->index = calloc(slots, sizeof(*m->index));
	if (!m->index)
		abort();
	m->mask = slots - 1;
	for (uint32_t e = 0; e < m->nent; e++) {
		if (!m->ent[e].live)
			continue;
		uint32_t i = (uint32_t)m->ent[e].hash & m->mask;
		while (m->index[i])
			i = (i + 1) & m->mask;
		m->index[i] = e + 1;
	}
}

/* Squeeze out deleted entries (never during a foreach: see exec.c). */
static void compact(struct map *m)
{
	uint32_t o = 0;
	for (uint32_t e = 0; e < m->nent; e++)
		if (m->ent[e].live)
			m->ent[o++] = m->ent[e];
	m->nent = o;
	m->oldest = 0;
	rebuild_index(m, m->mask + 1);
}

struct map_ent *map_get(struct map *m, const union cell *key, uint64_t hash)
{
	struct map_ent *e = map_find(m, key, hash);
	if (e)
		return e;
	if (m->nlive >= m->maxentries) {
		if (!m->wrap || !m->nlive)
			return NULL;
		/* a wrapping array: the oldest entry goes (stap's a%) */
		while (m->oldest < m->nent && !m->ent[m->oldest].live)
			m->oldest++;
		if (m->oldest == m->nent)
			return NULL;
		map_delete(m, &m->ent[m->oldest]);
	}
	if (m->nent == m->cap) {
		if (m->nent > 2 * m->nlive + 16 && !m->iterating) {
			compact(m);
		} else {
			uint32_t cap = m->cap ? m->cap * 2 : 16;
			struct map_ent *n = realloc(m->ent, sizeof(*n) * cap);
			if (!n)
				abort();
			m->ent = n;
			m->cap = cap;
		}
	}
	/* keep the index at most half full, counting holes */
	if (!m->index || (m->nent + 1) * 2 > m->mask + 1) {
		uint32_t slots = 32;
		while (slots < (m->nent + 1) * 4)
			slots *= 2;
		rebuild_index(m, slots);
	}
	e = &m->ent[m->nent];
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->live = true;
	for (int i = 0; i < m->nkeys; i++) {
		if (m->kty[i] == TY_STR) {
			size_t n = strnlen(key[i].s, MAXSTRINGLEN - 1);
			char *s = malloc(n + 1);
			if (!s)
				abort();
			memcpy(s, key[i].s, n);
			s[n] = 0;
			e->key[i].s = s;
		} else {
			e->key[i].n = key[i].n;
		}
	}
	if (m->vty == TY_STR)
		e->val.s = "";
	if (m->vty == TY_STAT)
		e->st = stat_new(m->hist);
	uint32_t i = (uint32_t)hash & m->mask;
	while (m->index[i])
		i = (i + 1) & m->mask;
	m->index[i] = ++m->nent;
	m->nlive++;
	return e;
}

static void ent_free(struct map *m, struct map_ent *e)
{
	for (int i = 0; i < m->nkeys; i++)
		if (m->kty[i] == TY_STR)
			free((char *)e->key[i].s);
	if (e->strcap)
		free((char *)e->val.s);
	free(e->st);
	e->strcap = 0;
	e->st = NULL;
	e->live = false;
}

void map_delete(struct map *m, struct map_ent *e)
{
	if (!e->live)
		return;
	ent_free(m, e);
	m->nlive--;
	/* the index slot keeps pointing at the dead entry: lookups skip it
	 * (live is false) and a rebuild drops it */
}

void map_clear(struct map *m)
{
	for (uint32_t e = 0; e < m->nent; e++)
		if (m->ent[e].live)
			ent_free(m, &m->ent[e]);
	m->nlive = 0;
	if (!m->iterating) {
		m->nent = 0;
		m->oldest = 0;
		if (m->index)
			memset(m->index, 0, sizeof(*m->index) * (m->mask + 1));
	}
}

void map_set_str(struct map_ent *e, const char *s)
{
	size_t n = strnlen(s, MAXSTRINGLEN - 1);
	if (e->strcap <= n) {
		uint32_t cap = (uint32_t)(n < 32 ? 32 : n + 1);
		char *p = e->strcap ? realloc((char *)e->val.s, cap) : malloc(cap);
		if (!p)
			abort();
		e->val.s = p;
		e->strcap = cap;
	}
	memmove((char *)e->val.s, s, n);
	((char *)e->val.s)[n] = 0;
}

void map_free(struct map *m)
{
	if (!m)
		return;
	m->iterating = 0;
	map_clear(m);
	free(m->ent);
	free(m->index);
	free(m);
}
