/*
 * Writing the process's own text.
 *
 * Two ways, chosen once at init by trying each on a scratch page:
 *
 *  - mprotect: for the length of a batch, every page that holds a byte to
 *    change is made RWX (never dropping PROT_EXEC, since other threads may be
 *    executing it), the bytes are stored directly, and each page gets its
 *    original protection back when the batch closes.  One mprotect per run
 *    of contiguous pages, and plain stores, so 10,000 sites cost microseconds.
 *  - /proc/self/mem: a pwrite at the address, which the kernel performs as a
 *    forced write that breaks copy-on-write without touching protections.
 *    Used where policy forbids RWX (SELinux execmod, PaX) or when DJP_TEXT=mem.
 *
 * Either way the first byte of a site is written with a single one-byte
 * store (a 1-byte pwrite is one byte copy in the kernel), so a thread that
 * fetches the site sees either the old or the new opcode byte, never a mix.
 * A file-backed page that is written becomes a private copy; once every
 * probe is gone it holds exactly the bytes of the file again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/x86/arch.h"
#include "lib/sysops.h"

enum { TEXT_UNSET, TEXT_MPROTECT, TEXT_PROCMEM };
static int text_mode;
static int procmem_fd = -1;
static long page_size;

static uintptr_t page_of(uintptr_t a)
{
	return a & ~(uintptr_t)(page_size - 1);
}

static int try_mprotect_mode(void)
{
	uint8_t *p = mmap(NULL, page_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;
	if (p == MAP_FAILED)
		return 0;
	ok = mprotect(p, page_size, PROT_READ | PROT_WRITE | PROT_EXEC) == 0;
	if (ok) {
		p[0] = X86_INT3;
		ok = mprotect(p, page_size, PROT_READ | PROT_EXEC) == 0 && p[0] == X86_INT3;
	}
	munmap(p, page_size);
	return ok;
}

static int try_procmem_mode(void)
{
	uint8_t *p = mmap(NULL, page_size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t b = X86_INT3;
	int ok;
	if (p == MAP_FAILED)
		return 0;
	procmem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ok = procmem_fd >= 0 && pwrite(procmem_fd, &b, 1, (off_t)(uintptr_t)p) == 1 && p[0] == X86_INT3;
	munmap(p, page_size);
	return ok;
}

int arch_text_init(void)
{
	const char *want = getenv("DJP_TEXT");
	page_size = sysconf(_SC_PAGESIZE);
	if (want && !strcmp(want, "mem")) {
		if (try_procmem_mode())
			return text_mode = TEXT_PROCMEM, 0;
	} else if (try_mprotect_mode()) {
		return text_mode = TEXT_MPROTECT, 0;
	} else if (try_procmem_mode()) {
		return text_mode = TEXT_PROCMEM, 0;
	}
	return -EPERM;
}

/* The protections of every mapping, read once per session from the
 * calling thread's maps (sorted by address, as the kernel prints them):
 * /proc/self's are the leader's, empty once the main thread has called
 * pthread_exit while other threads run on. */
int djp_maps_read(struct djp_maps *ms)
{
	char line[512];
	size_t cap = 0;
	FILE *f = fopen("/proc/thread-self/maps", "re");
	ms->n = 0;
	ms->m = NULL;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
			continue;
		if (ms->n == cap) {
			void *m = realloc(ms->m, (cap = cap ? cap * 2 : 64) * sizeof(*ms->m));
			if (!m) {
				fclose(f);
				free(ms->m);
				return -ENOMEM;
			}
			ms->m = m;
		}
		ms->m[ms->n].lo = lo;
		ms->m[ms->n].hi = hi;
		ms->m[ms->n].prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
				    (perms[2] == 'x' ? PROT_EXEC : 0);
		ms->n++;
	}
	fclose(f);
	return 0;
}

const struct djp_map *djp_maps_find(const struct djp_maps *ms, uintptr_t addr)
{
	size_t lo = 0, hi = ms->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < ms->m[mid].lo)
			hi = mid;
		else if (addr >= ms->m[mid].hi)
			lo = mid + 1;
		else
			return &ms->m[mid];
	}
	return NULL;
}

static int page_prot(const struct djp_maps *ms, uintptr_t page, int *prot)
{
	const struct djp_map *m = djp_maps_find(ms, page);
	if (!m)
		return -EFAULT;
	*prot = m->prot;
	return 0;
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}

/* Step 0 of a batch: make every page we will write writable (mprotect mode).
 * Each run of contiguous pages with one original protection is one mprotect. */
int arch_text_open(struct djp_text_session *s, const uintptr_t *addrs, const uint8_t *lens, size_t n)
{
	struct djp_maps ms;
	uintptr_t *pages;
	size_t np = 0;
	int err = 0;

	memset(s, 0, sizeof(*s));
	if (text_mode != TEXT_MPROTECT || n == 0)
		return 0;
	pages = malloc(sizeof(*pages) * n * 2);
	if (!pages)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		pages[np++] = page_of(addrs[i]);
		if (page_of(addrs[i] + lens[i] - 1) != page_of(addrs[i]))
			pages[np++] = page_of(addrs[i] + lens[i] - 1);
	}
	qsort(pages, np, sizeof(*pages), cmp_uptr);
	s->ranges = malloc(sizeof(*s->ranges) * np);
	if (!s->ranges || (err = djp_maps_read(&ms))) {
		free(pages);
		free(s->ranges);
		s->ranges = NULL;
		return err ? err : -ENOMEM;
	}
	for (size_t i = 0; i < np; i++) {
		int prot;
		if (i && pages[i] == pages[i - 1])
			continue;
		if ((err = page_prot(&ms, pages[i], &prot)))
			break;
		if (s->nranges && s->ranges[s->nranges - 1].start + s->ranges[s->nranges - 1].len == pages[i] &&
		    s->ranges[s->nranges - 1].prot == prot) {
			s->ranges[s->nranges - 1].len += page_size;
		} else {
			s->ranges[s->nranges].start = pages[i];
			s->ranges[s->nranges].len = page_size;
			s->ranges[s->nranges].prot = prot;
			s->ranges[s->nranges].done = 0;
			s->nranges++;
		}
	}
	free(pages);
	free(ms.m);
	for (size_t i = 0; !err && i < s->nranges; i++) {
		struct djp_text_range *r = &s->ranges[i];
		if (djp_sys_mprotect((void *)r->start, r->len, r->prot | PROT_READ | PROT_WRITE | PROT_EXEC))
			err = -errno;
		else
			r->done = 1;
	}
	if (err) {
		arch_text_close(s);
		return err;
	}
	return 0;
}

/* Restore every page's protection; never leaves an RWX mapping behind.
 * A failed restore is retried; only one that keeps failing is reported. */
int arch_text_close(struct djp_text_session *s)
{
	int err = 0;
	for (size_t i = 0; i < s->nranges; i++) {
		struct djp_text_range *r = &s->ranges[i];
		for (int tries = 0; r->done && tries < 100; tries++)
			if (djp_sys_mprotect((void *)r->start, r->len, r->prot) == 0)
				r->done = 0;
		if (r->done)
			err = -errno;
	}
	free(s->ranges);
	s->ranges = NULL;
	s->nranges = 0;
	return err;
}

/* Write len bytes at addr.  A 1-byte write is a single byte store. */
int arch_text_write(struct djp_text_session *s, uintptr_t addr, const uint8_t *buf, size_t len)
{
	(void)s;
	if (text_mode == TEXT_PROCMEM) {
		ssize_t w = djp_sys_pwrite(procmem_fd, buf, len, (off_t)addr);
		if (w == (ssize_t)len)
			return 0;
		return w < 0 ? -errno : -EIO;
	}
	if (len == 1)
		__atomic_store_n((uint8_t *)addr, buf[0], __ATOMIC_RELAXED);
	else
		memcpy((void *)addr, buf, len);
	return 0;
}
