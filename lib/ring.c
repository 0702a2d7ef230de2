/*
 * Per-thread ring buffers in one shared-memory region.
 *
 * The model is LTTng-UST's ring buffer, cut down to what a probe recorder
 * needs.  The traced process creates one region in a memfd: a header (magic,
 * version, geometry, clock parameters, mode) and N slots, each a slot header
 * plus one ring.  The djp tool receives the memfd over its socket and maps
 * it.  A thread claims a slot the first time it records (a CAS of the slot's
 * owner word from FREE to tid|ACTIVE), keeps the slot in an initial-exec TLS
 * variable, and from then on is the only writer of that ring: one producer,
 * one consumer, no locks and no atomic read-modify-write on the fast path.
 * Every slot header puts the claim word, the producer's counters and the
 * consumer's read position on separate 128-byte line pairs (the adjacent-line
 * prefetcher pulls lines in pairs), so no two writers share a line.
 *
 * Positions.  head (producer) and tail (consumer) count bytes since the slot
 * was claimed and never wrap; data lives at pos & (size - 1).  The producer
 * writes an event, then publishes head with a release store; the consumer
 * loads head with acquire and may read everything below it.  In discard mode
 * the producer first checks that the event fits below tail + size, against a
 * cached copy of tail that it refreshes only when the cached one says "full",
 * so the consumer's line is not pulled on every event.  No room: the event is
 * dropped and lost_full counted; the producer never waits.
 *
 * Sub-buffers, one template for both modes.  The ring is cut into nsubbufs
 * sub-buffers and an event never straddles two (the rest of a sub-buffer is
 * skipped, with a pad header when 16 bytes or more are left).  Entering
 * sub-buffer k, the producer stores seq = k + 1 in the sub-buffer's record
 * (and the number of events recorded so far), then a release fence, then
 * writes its data: the write side of a seqlock whose sequence is the
 * sub-buffer number.  Discard and overwrite mode run the same code; the only
 * difference is that overwrite mode skips the room check, so the producer
 * laps the consumer and reuses the oldest sub-buffer.
 *
 * Overwrite snapshots.  The consumer of a flight recorder reads while the
 * producer keeps writing, so it copies and then validates: load head (h),
 * copy the sub-buffers that can hold events between its tail and h (at most
 * the nsubbufs newest, the last one only up to h) into private memory, issue
 * an acquire fence, then re-read each copied sub-buffer's seq.  If sub-buffer
 * k no longer says k + 1, the producer has entered k + nsubbufs, which reuses
 * the same bytes, while we copied: the copy of k, and of everything older,
 * may be torn and is thrown away; the newer ones are intact, since the
 * producer fills sub-buffers strictly in order and announces each before
 * writing into it.  Bytes below h were committed before we loaded h, so the
 * newest, partial sub-buffer is read up to h and no further.  The events are
 * then parsed from the private copy, so an event is delivered whole or not
 * at all.  The sub-buffer records also carry the event count at entry, which
 * makes the loss exact: events up to h = count(newest) + events parsed in it;
 * whatever of those was neither delivered now nor before was overwritten.
 * If the producer lapped the whole ring during the copy (nothing validates),
 * we retry a few times and otherwise leave the slot for the next drain.
 *
 * Recursion.  A signal handler that interrupts a thread in the middle of a
 * record and records itself must not touch the half-written event or the
 * unpublished head.  A per-thread nesting flag makes the inner record a
 * counted loss (lost_nested, an atomic add, since it may itself interrupt
 * an outer loss count).  LTTng nests properly with per-level reservations; a
 * probe that fires inside a signal handler that interrupted a probe is rare
 * enough here that dropping it, visibly, is the better trade for a fast
 * path without atomic reservations.
 *
 * Strings.  A %s argument is copied into the event, bounded, NUL-terminated,
 * after the pointer it came from (a script may want both).  The copy is
 * fault-safe: by default through process_vm_readv() on our own thread (the
 * kernel reports a bad pointer as EFAULT instead of a SIGSEGV, partial reads
 * stop at the first unreadable page, the remote range being split at the
 * page boundary so that the readable part still arrives), which needs no
 * signal handler of ours and costs a system call per string.  Where the
 * engine can keep a fault handler of its own installed it gives the ring a
 * plain copy with exception-table style recovery instead, a few ns a string
 * (djp_ring_set_fast_copy; kernel/safe_copy.c says when).  A %p is a plain
 * word, never read.
 *
 * Threads coming and going.  A thread keeps one slot per region from its
 * first record to its last instruction.  Its exit is not one moment: glibc
 * runs the thread_local destructors, then the pthread key destructors in key
 * order, in up to PTHREAD_DESTRUCTOR_ITERATIONS rounds, then frees the
 * thread's resources (free(), which a probe may watch), and a probe may fire
 * in any of them.  So the ring's key destructor does not end the slot: it
 * only marks the thread's slots EXITING (in every live region), and the
 * thread goes on recording into them through the same TLS; a record of a
 * thread whose exit has begun that needs a slot (its first, or in another
 * region) claims an EXITING one, and finds it again by the thread's serial.
 * Once the thread is gone, its slots are retired: the kernel lets go of a
 * tid after the thread's last instruction, so a slot whose owner's tid is no
 * thread of its process any more (tgkill(pid, tid, 0) says ESRCH) is never
 * written again, and is moved to RETIRED.  Every thread's exit does that for
 * the EXITING slots of those gone before it, the agent every 100 ms for the
 * last one, and a claim that finds no free slot (the first of a region and
 * every 256th after) for the ACTIVE ones of threads gone too (one whose
 * first record came after its exit's last round, or in a process where the
 * ring has no key).  A thread takes back only a slot that holds its own
 * serial (a number unique in the process, with its process's pid, in the
 * slot's ownership line): a new thread that got the tid of one gone never
 * writes into the old one's slot, which is what makes the retirement of a
 * slot whose tid is free final.  The consumer reads an EXITING slot as an
 * active one, and recycles a retired slot once it has read it to the end: it
 * reports the final counts, zeroes the positions, counters and owner's
 * numbers and frees the owner word with a release CAS.  So an event recorded
 * at any point of a thread's exit is in its thread's slot, read once;
 * before, the key destructor retired the slot and each later record claimed
 * another, which nobody retired after glibc's last round: 1000 threads that
 * recorded on their way out took the 256 slots, and every event after was
 * lost for want of one.  After fork() the child forgets the parent thread's
 * slot (a pthread_atfork handler), so two processes never write one ring.
 *
 * Slots handed on.  A retired slot is free again only once the consumer
 * has read it, and a consumer is a process of its own that a busy target
 * can keep off the CPU: a program that starts and ends threads faster than
 * the tool drains (50 at a time, on two cores, took the 256 slots in 13 ms
 * while the tool slept its 5 ms between drains, or waited for a core) lost
 * every event of every thread after.  So in discard mode a thread that
 * finds no free slot takes a retired one over, ring and unread events
 * included: it moves the owner word from RETIRED to TAKING (a CAS; the
 * consumer recycles only by a CAS from RETIRED too, so exactly one of them
 * has it), writes an owner record at the old head (DJP_EVF_OWNER: the old
 * tid, the new, and the slot's counts so far, which were the old owner's),
 * publishes head, and only then makes the owner word its own.  The consumer
 * attributes events by the records: those before a record to its old tid,
 * with that thread's final counts reported as a retired slot's; those after
 * to the new one.  For a slot it has no owner for yet it takes the old tid
 * of the first record below head, or else the owner word's; since a taker
 * publishes its record before its owner word and the consumer reads the
 * owner word before head, an owner word that names the taker comes with
 * its record in range.  Only a ring with room for the record and a
 * sub-buffer more is taken (a full one would lose the events for want of
 * room instead).  A flight recorder's ring is kept to the end, never
 * handed on.
 *
 * Trust, producer side.  The consumer maps the region read-write, so every
 * shared word may hold anything at any time.  The producer reads geometry
 * only from its private copies (struct djp_region, the TLS), keeps the
 * position it writes at in its TLS (the shared head is written, read back
 * only when a thread returns to a slot it already owns), and computes every
 * write address so that it stays inside its own ring whatever a position
 * says: the reservation puts an event inside one sub-buffer for any start
 * position, and the fast path's bound (fast_end) is derived from the
 * thread's own position by that reservation.  The consumer's tail and the
 * cached copy of it only decide whether an event fits; a lying consumer
 * loses its own events, nothing else.  An owner word set to FREE by a
 * consumer lets two threads share one ring: their events interleave and may
 * be torn, still inside that ring.  So does a forged serial or pid in the
 * ownership line: a thread that does not find its slot claims another, and
 * a slot retired while its thread lives is shared as a freed one is.
 *
 * The consumer trusts nothing in the region.  The header is copied and
 * validated once (magic, version, every size and the relations between
 * them, the file's size and its seals) and never re-read.  Positions are
 * clamped, every event is copied out before it is validated (size, 8-byte
 * alignment, within its sub-buffer, within the committed range, header and
 * argument words within the size), and every loop advances by at least eight
 * bytes over at most one ring, so garbage, or a producer that died with an
 * event half-written, costs at most a skipped ring, never a crash or a hang.
 * One consumer per region at a time.
 */
/* The slow paths run from the lean trampoline (ring.h promises general
 * registers only): the compiler must not use a vector or x87 register. */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/init_order.h"
#include "ring.h"

__thread struct djp_ring_tls djp_ring_tls __attribute__((tls_model("initial-exec")));

#define DEFAULT_NSLOTS 256
#define DEFAULT_RING_SIZE (1u << 20)
#define DEFAULT_NSUBBUFS 16
#define SNAPSHOT_TRIES 4

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct djp_region *live_regions;
static uint64_t next_region_id = 1;
static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static int ring_key_ok;

static inline int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static inline uint32_t log2u(uint64_t x)
{
	return (uint32_t)__builtin_ctzll(x);
}

static uint32_t my_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static struct djp_slot_hdr *region_slot(const struct djp_region *r, unsigned i)
{
	return (struct djp_slot_hdr *)(r->base + DJP_REGION_HDR_SIZE + (uint64_t)i * r->slot_stride);
}

/* ---- producer: threads ------------------------------------------------- */

static void thread_exit(void *unused);

static void atfork_prepare(void)
{
	pthread_mutex_lock(&live_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&live_lock);
}

static void atfork_child(void)
{
	djp_ring_tls.region_id = 0;
	djp_ring_tls.slot = NULL;
	djp_ring_tls.fast_end = 0;
	djp_ring_tls.nesting = 0;
	djp_ring_tls.serial = 0; /* another thread now, of another process */
	djp_ring_tls.exiting = 0;
	pthread_mutex_unlock(&live_lock);
}

/* glibc keeps the values of the first 32 keys in the thread itself, and
 * allocates for the others. */
#define SAFE_KEYS 32

static void ring_init_once(void)
{
	pthread_key_t k;

	if (pthread_key_create(&k, thread_exit) == 0) {
		if (k < SAFE_KEYS) {
			ring_key = k;
			ring_key_ok = 1;
		} else {
			pthread_key_delete(k);
		}
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* The key is made before main, not at the first region: a thread's first
 * record may be in a signal handler or a lean trampoline, where
 * pthread_setspecific must not allocate (malloc's lock, and libc's vector
 * memset: the first hit of a thread changed zmm16 in a traced program),
 * and glibc allocates for keys past the first 32.  Keys made by
 * constructors this early are among the first 32 in any program that does
 * not make 32 of its own before; the library loaded into one that did (djp
 * -x) gets none, and its exited threads' slots stay theirs (a thread that
 * finds none free is counted in lost_noslot), as kernel/rcu.c's
 * registrations do. */
DJP_ENGINE_INIT static void ring_init_early(void)
{
	pthread_once(&ring_once, ring_init_once);
}

/* The region's high-water mark of slots (lib/ring.h), bounded by nslots:
 * a hostile producer cannot make a reader look past the end. */
static unsigned slots_used(const struct djp_region_hdr *h, unsigned nslots)
{
	unsigned used = __atomic_load_n(&h->slots_used, __ATOMIC_ACQUIRE);
	return used < nslots ? used : nslots;
}

static void raise_slots_used(struct djp_region_hdr *h, unsigned to)
{
	unsigned cur = __atomic_load_n(&h->slots_used, __ATOMIC_RELAXED);
	while (cur < to && !__atomic_compare_exchange_n(&h->slots_used, &cur, to, false, __ATOMIC_RELEASE,
							__ATOMIC_RELAXED))
		;
}

/* owner word of s from one state of tid's to another */
static bool slot_move(struct djp_slot_hdr *s, uint32_t tid, uint32_t from, uint32_t to)
{
	uint64_t expect = (uint64_t)tid << 32 | from;
	return __atomic_compare_exchange_n(&s->owner, &expect, (uint64_t)tid << 32 | to, false, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
}

/* Whether thread tid of this process pid has exited: no thread of the
 * process has that tid any more.  The kernel lets go of a tid after the
 * thread's last instruction; a tid taken again since by a new thread of
 * the process reads as alive, which only keeps a slot longer. */
static bool thread_gone(uint32_t pid, uint32_t tid)
{
	int saved_errno = errno;
	bool gone = syscall(SYS_tgkill, (long)pid, (long)tid, 0L) < 0 && errno == ESRCH;
	errno = saved_errno;
	return gone;
}

/* Retire the slots of r whose owner, a thread of this process other than
 * the caller, has exited: EXITING ones, and with `active` ACTIVE ones too
 * (a thread whose first record came after the ring's key destructor had
 * run, or that never ran it).  No thread writes into such a slot again:
 * its owner is gone, and a thread takes back only a slot of its own
 * serial.  Lock-free (CAS), async-signal-safe. */
static unsigned reap(struct djp_region *r, uint32_t pid, uint32_t self, bool active)
{
	unsigned n = 0;

	for (unsigned i = 0, used = slots_used(r->hdr, r->nslots); i < used; i++) {
		struct djp_slot_hdr *s = region_slot(r, i);
		uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
		uint32_t tid = (uint32_t)(owner >> 32), state = (uint32_t)owner;

		if ((state != DJP_SLOT_EXITING && !(active && state == DJP_SLOT_ACTIVE)) || tid == self ||
		    __atomic_load_n(&s->pid, __ATOMIC_RELAXED) != pid || !thread_gone(pid, tid))
			continue;
		n += slot_move(s, tid, state, DJP_SLOT_RETIRED);
	}
	return n;
}

unsigned djp_ring_reap_exited(void)
{
	uint32_t pid = (uint32_t)getpid(), self = my_tid();
	unsigned n = 0;

	pthread_mutex_lock(&live_lock);
	for (struct djp_region *r = live_regions; r; r = r->next)
		n += reap(r, pid, self, false);
	pthread_mutex_unlock(&live_lock);
	return n;
}

/* The ring's key destructor: the thread's exit has begun, but not ended.
 * glibc runs the destructors of keys made after ours after it (and again,
 * in up to PTHREAD_DESTRUCTOR_ITERATIONS rounds, for keys set again), then
 * frees the thread's resources (free(), which a probe may watch): a probe
 * may fire in any of them.  So the thread keeps its slots and goes on
 * recording into them; they only become EXITING, for the next exit (or
 * the agent) to retire once the thread is gone. */
static void thread_exit(void *unused)
{
	uint32_t tid = my_tid(), pid = (uint32_t)getpid();

	djp_ring_tls.exiting = 1;
	pthread_mutex_lock(&live_lock);
	for (struct djp_region *r = live_regions; r; r = r->next) {
		for (unsigned i = 0, used = slots_used(r->hdr, r->nslots); i < used; i++)
			slot_move(region_slot(r, i), tid, DJP_SLOT_ACTIVE, DJP_SLOT_EXITING);
		reap(r, pid, tid, false);
	}
	pthread_mutex_unlock(&live_lock);
}

void djp_ring_thread_retire(void)
{
	uint32_t tid = my_tid();

	pthread_mutex_lock(&live_lock);
	for (struct djp_region *r = live_regions; r; r = r->next) {
		for (unsigned i = 0, used = slots_used(r->hdr, r->nslots); i < used; i++)
			if (!slot_move(region_slot(r, i), tid, DJP_SLOT_ACTIVE, DJP_SLOT_RETIRED))
				slot_move(region_slot(r, i), tid, DJP_SLOT_EXITING, DJP_SLOT_RETIRED);
	}
	pthread_mutex_unlock(&live_lock);
	djp_ring_tls.region_id = 0;
	djp_ring_tls.slot = NULL;
	djp_ring_tls.fast_end = 0;
}

/* Room for an owner record, however the sub-buffers fall. */
#define OWNER_RECORD_SIZE (DJP_EV_HDR_SIZE + 8u * DJP_OWNER_NARGS)

/* A retired slot of this process whose ring has room for an owner record
 * and a sub-buffer more, made TAKING (its old owner's tid in *old_tid): no
 * other thread takes it, and the consumer does not recycle it, until the
 * taker makes it its own.  A full ring helps no one: its events would be
 * lost for want of room instead of a slot. */
static struct djp_slot_hdr *take_retired(struct djp_region *r, uint32_t pid, uint32_t *old_tid)
{
	for (unsigned i = 0, used = slots_used(r->hdr, r->nslots); i < used; i++) {
		struct djp_slot_hdr *s = region_slot(r, i);
		uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE), head, tail;
		uint32_t tid = (uint32_t)(owner >> 32);

		if ((uint32_t)owner != DJP_SLOT_RETIRED || !tid || __atomic_load_n(&s->pid, __ATOMIC_RELAXED) != pid)
			continue;
		head = __atomic_load_n(&s->head, __ATOMIC_RELAXED);
		tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
		if (head < tail || head - tail + r->subbuf_size + OWNER_RECORD_SIZE > r->ring_size)
			continue;
		if (__atomic_compare_exchange_n(&s->owner, &owner, (uint64_t)tid << 32 | DJP_SLOT_TAKING, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			*old_tid = tid;
			return s;
		}
	}
	return NULL;
}

/* The owner record at the head of a slot taken over (t is set up for
 * it): which thread's the events after it are, and the counts that were
 * the old owner's.  The reservation of djp_ring_record_loads, for one
 * fixed-size event that take_retired made room for. */
static bool hand_on(struct djp_ring_tls *t, struct djp_slot_hdr *s, uint32_t old_tid, uint32_t new_tid)
{
	uint64_t sb_size = t->sb_mask + 1, pos = t->head, at, ts, *e;
	uint64_t tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);

	if (!djp_ring_place(pos, OWNER_RECORD_SIZE, sb_size, &at) || at + OWNER_RECORD_SIZE - tail > t->ring_size)
		return false;
	s->tail_cache = tail;
	ts = djp_clock_raw();
	djp_ring_pad(t->data, t->ring_size, sb_size, pos, at, ts);
	djp__ring_enter(t, s, at);
	e = (uint64_t *)(t->data + (at & (t->ring_size - 1)));
	e[0] = ts;
	e[2] = old_tid;
	e[3] = new_tid;
	e[4] = __atomic_load_n(&s->nevents, __ATOMIC_RELAXED);
	e[5] = __atomic_load_n(&s->lost_full, __ATOMIC_RELAXED);
	e[6] = __atomic_load_n(&s->lost_nested, __ATOMIC_RELAXED);
	e[1] = djp_ev_word(DJP_MARKER_OWNER, OWNER_RECORD_SIZE, DJP_OWNER_NARGS, DJP_EVF_OWNER);
	__atomic_store_n(&s->nevents, s->nevents + 1, __ATOMIC_RELAXED);
	t->head = at + OWNER_RECORD_SIZE;
	__atomic_store_n(&s->head, t->head, __ATOMIC_RELEASE);
	return true;
}

/*
 * The first record of a thread in a region: find the slot this thread
 * already owns there (it may have recorded into another region since), or
 * claim the lowest free one and raise the region's high-water mark, so that
 * the consumer, each drain, and a thread's lookups scan the slots in use
 * and not all of them (every slot header is a page of its own: 256 of
 * them per drain for each of a hundred processes was most of a tool's
 * time).  Threads starting together contend for the first free slots; a
 * claim is once per thread and region.  Async-signal-safe:
 * gettid, getpid, tgkill, loads, CAS, and pthread_setspecific on a key
 * made at region creation (glibc keeps the first 32 keys in the thread
 * descriptor).
 */
int djp__ring_attach(struct djp_region *r)
{
	static uint64_t last_serial;
	struct djp_ring_tls *t = &djp_ring_tls;
	uint32_t tid = my_tid(), pid = (uint32_t)getpid();
	uint64_t active = (uint64_t)tid << 32 | DJP_SLOT_ACTIVE, exiting = (uint64_t)tid << 32 | DJP_SLOT_EXITING;
	struct djp_slot_hdr *slot = NULL;
	uint64_t head = 0;
	uint32_t old_tid = 0;

	unsigned used = slots_used(r->hdr, r->nslots);

	if (!t->serial)
		t->serial = __atomic_add_fetch(&last_serial, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < used && !slot; i++) {
		struct djp_slot_hdr *s = region_slot(r, i);
		uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
		/* serials count per process, and a child of fork starts
		 * from its parent's count */
		if ((owner == active || owner == exiting) &&
		    __atomic_load_n(&s->serial, __ATOMIC_RELAXED) == t->serial &&
		    __atomic_load_n(&s->pid, __ATOMIC_RELAXED) == pid)
			slot = s;
	}
	/* Back in a slot of ours after recording elsewhere: its head is the
	 * one place the position was kept.  Any value is safe here (see
	 * "Trust" above); a fresh claim starts at 0, as recycling leaves it. */
	if (slot)
		head = __atomic_load_n(&slot->head, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < r->nslots && !slot; i++) {
		uint64_t expect = 0;
		struct djp_slot_hdr *s = region_slot(r, i);
		if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&s->owner, &expect, t->exiting ? exiting : active, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			slot = s;
			__atomic_store_n(&s->serial, t->serial, __ATOMIC_RELAXED);
			__atomic_store_n(&s->pid, pid, __ATOMIC_RELAXED);
			raise_slots_used(r->hdr, i + 1);
		}
	}
	/* None free: the slot of a thread gone, ring and all, with the
	 * events it holds still unread (not a flight recorder's, whose
	 * events are kept to the end).  Slots of threads gone are retired
	 * first: the EXITING ones (the exit of the thread after retires
	 * them, but it may not have come yet) at the first such claim and
	 * every 16th after, the ACTIVE ones every 256th, since this is a
	 * system call per slot and a thread with no slot comes here at each
	 * record. */
	if (!slot && !(r->mode == DJP_RING_DISCARD && (slot = take_retired(r, pid, &old_tid)))) {
		uint64_t tries = __atomic_fetch_add(&r->noslot_tries, 1, __ATOMIC_RELAXED);
		if (!(tries & 15) && reap(r, pid, tid, !(tries & 255)) && r->mode == DJP_RING_DISCARD)
			slot = take_retired(r, pid, &old_tid);
	}
	if (!slot) {
		__atomic_fetch_add(&r->hdr->lost_noslot, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	if (old_tid)
		head = __atomic_load_n(&slot->head, __ATOMIC_RELAXED);
	t->slot = slot;
	t->data = (uint8_t *)slot + r->slot_hdr_size;
	t->ring_size = r->ring_size;
	t->sb_mask = r->subbuf_size - 1;
	t->sb_shift = log2u(r->subbuf_size);
	t->nsb_mask = r->nsubbufs - 1;
	t->mode = r->mode;
	t->str_bound = r->str_bound;
	t->tid = tid;
	t->head = head;
	t->fast_end = 0;
	if (old_tid) {
		if (!hand_on(t, slot, old_tid, tid)) {
			t->slot = NULL;
			__atomic_store_n(&slot->owner, (uint64_t)old_tid << 32 | DJP_SLOT_RETIRED, __ATOMIC_RELEASE);
			__atomic_fetch_add(&r->hdr->lost_noslot, 1, __ATOMIC_RELAXED);
			return -ENOSPC;
		}
		__atomic_store_n(&slot->serial, t->serial, __ATOMIC_RELAXED);
		/* the record is published (its head) before the owner says
		 * whose the slot is now: a consumer that reads the new owner
		 * finds the record, and knows whose the events before it are */
		__atomic_store_n(&slot->owner, t->exiting ? exiting : active, __ATOMIC_RELEASE);
	}
	/* the key's destructor marks the thread's exit (it ran already for
	 * an exiting one, whose slot is EXITING from the start) */
	if (ring_key_ok && !t->exiting)
		pthread_setspecific(ring_key, (void *)1);
	t->region_id = r->id;
	return 0;
}

int djp__ring_nested(struct djp_region *r)
{
	struct djp_ring_tls *t = &djp_ring_tls;

	if (t->region_id == r->id && t->slot)
		__atomic_fetch_add(&t->slot->lost_nested, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&r->hdr->lost_noslot, 1, __ATOMIC_RELAXED);
	return -EAGAIN;
}

/* ---- producer: strings -------------------------------------------------- */

static uint32_t put_text(char *dst, const char *text)
{
	uint32_t n = 0;
	for (; text[n]; n++)
		dst[n] = text[n];
	dst[n] = 0;
	return n;
}

static djp_ring_copy_fn fast_copy;

void djp_ring_set_fast_copy(djp_ring_copy_fn fn)
{
	__atomic_store_n(&fast_copy, fn, __ATOMIC_RELEASE);
}

/* n bytes copied and no NUL among them: cut at the bound, or cut short by
 * a fault ("<bad>" when nothing was readable). */
static uint64_t unterminated(char *dst, uint32_t n, bool fault)
{
	if (fault && !n)
		return put_text(dst, DJP_STR_BAD_TEXT) | DJP_STR_FAULT;
	dst[n] = 0;
	return n | (fault ? DJP_STR_FAULT : DJP_STR_TRUNCATED);
}

/* Copy at most bound - 1 bytes of src and a NUL; returns the descriptor's
 * length and flag bits. */
static uint64_t copy_string(char *dst, const char *src, uint32_t bound, uint32_t tid)
{
	uintptr_t p = (uintptr_t)src;
	uint32_t want = bound - 1, first, n;
	djp_ring_copy_fn fast = __atomic_load_n(&fast_copy, __ATOMIC_ACQUIRE);
	struct iovec local = { dst, want }, remote[2];
	int saved_errno;
	long got;

	if (!src)
		return put_text(dst, DJP_STR_NULL_TEXT) | DJP_STR_NULL;
	if (p < 4096 || p + want < p)
		return put_text(dst, DJP_STR_BAD_TEXT) | DJP_STR_FAULT;
	if (fast) {
		uint64_t r = fast(dst, src, want);
		n = (uint32_t)r;
		if (!(r & DJP_RING_COPY_DECLINED)) {
			if (!(r >> 63) && n < want)
				return n; /* the NUL is copied */
			return unterminated(dst, n, r >> 63);
		}
	}
	first = 4096 - (uint32_t)(p & 4095);
	if (first > want)
		first = want;
	remote[0] = (struct iovec){ (void *)src, first };
	remote[1] = (struct iovec){ (void *)(p + first), want - first };
	saved_errno = errno;
	got = syscall(SYS_process_vm_readv, (long)tid, &local, 1L, remote, want > first ? 2L : 1L, 0L);
	errno = saved_errno;
	n = got > 0 ? (uint32_t)got : 0;
	for (uint32_t i = 0; i < n; i++)
		if (!dst[i])
			return i;
	return unterminated(dst, n, n < want); /* short: the rest was unreadable */
}

uint32_t djp__ring_put_strings(uint64_t *ev, uint32_t size, const uint64_t *args, unsigned nargs, uint32_t str_mask,
			       uint32_t bound)
{
	for (unsigned i = 0; i < nargs; i++) {
		uint64_t d;
		if (!(str_mask & (1u << i)))
			continue;
		d = copy_string(djp_ring_str_text(ev, size, args[i]), (const char *)(uintptr_t)args[i], bound,
				djp_ring_tls.tid);
		size = djp_ring_str_put(ev, i, size, d);
	}
	return size;
}

uint64_t djp_ring_copy_string(char *dst, const char *src, uint32_t bound)
{
	return copy_string(dst, src, bound, djp_ring_tls.tid);
}

/* ---- producer: regions ------------------------------------------------- */

struct djp_region *djp_region_create(const struct djp_ring_opts *opts)
{
	struct djp_ring_opts o = { sizeof(o), DEFAULT_NSLOTS, DEFAULT_RING_SIZE, DEFAULT_NSUBBUFS, DJP_RING_DISCARD,
				   DJP_RING_STR_BOUND };
	struct djp_region *r;
	struct djp_region_hdr *h;
	uint64_t slot_hdr, stride, total;
	int fd, err;

	if (opts) {
		if (opts->sz < offsetof(struct djp_ring_opts, str_bound) + sizeof(unsigned)) {
			errno = EINVAL;
			return NULL;
		}
		o.nslots = opts->nslots ? opts->nslots : o.nslots;
		o.ring_size = opts->ring_size ? opts->ring_size : o.ring_size;
		o.nsubbufs = opts->nsubbufs ? opts->nsubbufs : o.nsubbufs;
		o.mode = opts->mode;
		o.str_bound = opts->str_bound ? opts->str_bound : o.str_bound;
	}
	if (o.nslots > DJP_RING_MAX_SLOTS || !is_pow2(o.ring_size) || o.ring_size < DJP_RING_MIN_SIZE ||
	    o.ring_size > DJP_RING_MAX_SIZE || !is_pow2(o.nsubbufs) || o.ring_size / o.nsubbufs < DJP_SUBBUF_MIN_SIZE ||
	    (o.mode != DJP_RING_DISCARD && o.mode != DJP_RING_OVERWRITE) ||
	    (o.mode == DJP_RING_OVERWRITE && o.nsubbufs < 2) || o.str_bound < 8 || o.str_bound > DJP_RING_STR_BOUND_MAX) {
		errno = EINVAL;
		return NULL;
	}
	djp_clock_init();
	pthread_once(&ring_once, ring_init_once);

	slot_hdr = djp_slot_hdr_size(o.nsubbufs);
	stride = slot_hdr + o.ring_size;
	total = DJP_REGION_HDR_SIZE + (uint64_t)o.nslots * stride;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	fd = memfd_create("djp-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		goto fail;
	if (ftruncate(fd, (off_t)total) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail_fd;
	r->base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED)
		goto fail_fd;
	r->hdr = h = (struct djp_region_hdr *)r->base;
	r->size = total;
	r->fd = fd;
	r->nslots = o.nslots;
	r->nsubbufs = o.nsubbufs;
	r->mode = o.mode;
	r->str_bound = o.str_bound;
	r->ring_size = o.ring_size;
	r->subbuf_size = o.ring_size / o.nsubbufs;
	r->slot_stride = stride;
	r->slot_hdr_size = slot_hdr;

	h->version = DJP_RING_VERSION;
	h->hdr_size = sizeof(*h);
	h->slot_hdr_size = (uint32_t)slot_hdr;
	h->nslots = o.nslots;
	h->ring_size = o.ring_size;
	h->subbuf_size = r->subbuf_size;
	h->nsubbufs = o.nsubbufs;
	h->mode = o.mode;
	h->slot_stride = stride;
	h->slots_offset = DJP_REGION_HDR_SIZE;
	h->total_size = total;
	h->str_bound = o.str_bound;
	h->producer_pid = (uint32_t)getpid();
	h->clock = *djp_clock_params();
	__atomic_store_n(&h->magic, DJP_RING_MAGIC, __ATOMIC_RELEASE);

	pthread_mutex_lock(&live_lock);
	r->id = next_region_id++;
	r->next = live_regions;
	live_regions = r;
	pthread_mutex_unlock(&live_lock);
	return r;

fail_fd:
	err = errno;
	close(fd);
	errno = err;
fail:
	err = errno;
	free(r);
	errno = err;
	return NULL;
}

void djp_region_destroy(struct djp_region *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&live_lock);
	for (struct djp_region **p = &live_regions; *p; p = &(*p)->next) {
		if (*p == r) {
			*p = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&live_lock);
	if (djp_ring_tls.region_id == r->id)
		djp_ring_tls.region_id = 0;
	munmap(r->base, r->size);
	close(r->fd);
	free(r);
}

int djp_region_fd(const struct djp_region *r)
{
	return r->fd;
}

/* ---- consumer ---------------------------------------------------------- */

struct consumer_slot {
	uint64_t tail;	      /* private copy: the shared one is only written */
	uint64_t delivered;
	uint64_t overwritten;
	uint64_t accounted;   /* overwrite: events before tail, delivered or lost */
	uint64_t corrupt;
	bool resumed;	      /* opened with tail != 0: accounted is unknown */
	/* discard mode: the thread whose events are at tail (0: not known
	 * yet), and the counts that were its predecessors' in this slot
	 * (owner records; "Slots handed on") */
	uint32_t tid;
	struct {
		uint64_t produced, lost_full, lost_nested, delivered, corrupt;
	} base;
};

struct djp_consumer {
	uint8_t *base;
	size_t size;
	struct djp_region_hdr h; /* validated copy; the shared one is never re-read */
	uint32_t sb_shift;
	struct consumer_slot *slots;
	uint8_t *snap;		 /* overwrite mode: private copy of one ring */
	/* a read-only mapping (djp_consumer_open_mapped): nothing is stored
	 * into it, tails stay private (djp_consumer_tail) */
	bool ro;
	uint64_t evbuf[DJP_EV_MAX_SIZE / 8 + 1];
};

static int header_ok(const struct djp_region_hdr *h, uint64_t file_size)
{
	if (h->magic != DJP_RING_MAGIC || h->version != DJP_RING_VERSION || h->hdr_size != sizeof(*h))
		return 0;
	if (h->mode != DJP_RING_DISCARD && h->mode != DJP_RING_OVERWRITE)
		return 0;
	if (!is_pow2(h->ring_size) || h->ring_size < DJP_RING_MIN_SIZE || h->ring_size > DJP_RING_MAX_SIZE)
		return 0;
	if (!is_pow2(h->nsubbufs) || h->subbuf_size != h->ring_size / h->nsubbufs ||
	    h->subbuf_size < DJP_SUBBUF_MIN_SIZE)
		return 0;
	if (h->slot_hdr_size != djp_slot_hdr_size(h->nsubbufs) || h->slot_stride != h->slot_hdr_size + h->ring_size)
		return 0;
	if (!h->nslots || h->nslots > DJP_RING_MAX_SLOTS || h->slots_offset != DJP_REGION_HDR_SIZE)
		return 0;
	if (h->total_size != h->slots_offset + (uint64_t)h->nslots * h->slot_stride || h->total_size > file_size)
		return 0;
	if (h->clock.kind == DJP_CLOCK_MONOTONIC)
		return h->clock.mult == 1 && h->clock.shift == 0;
	return h->clock.kind == DJP_CLOCK_TSC && h->clock.shift < 64 && h->clock.mult;
}

struct djp_consumer *djp_consumer_open(int fd)
{
	struct djp_consumer *c;
	struct djp_region_hdr h;
	struct stat st;
	int seals;
	void *base;

	if (fstat(fd, &st) < 0)
		return NULL;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		errno = EPERM;
		return NULL;
	}
	if (st.st_size < (off_t)DJP_REGION_HDR_SIZE || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    !header_ok(&h, (uint64_t)st.st_size)) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h = h;
	c->sb_shift = log2u(h.subbuf_size);
	c->slots = calloc(h.nslots, sizeof(*c->slots));
	if (h.mode == DJP_RING_OVERWRITE)
		c->snap = malloc(h.ring_size);
	base = mmap(NULL, h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!c->slots || (h.mode == DJP_RING_OVERWRITE && !c->snap) || base == MAP_FAILED) {
		int err = base == MAP_FAILED ? errno : ENOMEM;
		if (base != MAP_FAILED)
			munmap(base, h.total_size);
		free(c->slots);
		free(c->snap);
		free(c);
		errno = err;
		return NULL;
	}
	c->base = base;
	c->size = h.total_size;
	for (unsigned i = 0, used = slots_used((const struct djp_region_hdr *)c->base, h.nslots); i < used; i++) {
		struct djp_slot_hdr *s = (struct djp_slot_hdr *)(c->base + h.slots_offset + (uint64_t)i * h.slot_stride);
		c->slots[i].tail = __atomic_load_n(&s->tail, __ATOMIC_RELAXED);
		c->slots[i].resumed = c->slots[i].tail != 0;
	}
	return c;
}

struct djp_consumer *djp_consumer_open_mapped(void *base, size_t size)
{
	struct djp_consumer *c;
	struct djp_region_hdr h;

	if (size < DJP_REGION_HDR_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(&h, base, sizeof(h));
	if (!header_ok(&h, size) || h.mode != DJP_RING_DISCARD) {
		errno = EINVAL;
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c))) || !(c->slots = calloc(h.nslots, sizeof(*c->slots)))) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->h = h;
	c->sb_shift = log2u(h.subbuf_size);
	c->base = base;
	c->size = size;
	c->ro = true;
	return c;
}

uint64_t djp_consumer_tail(const struct djp_consumer *c, unsigned slot)
{
	return slot < c->h.nslots ? c->slots[slot].tail : 0;
}

void djp_consumer_close(struct djp_consumer *c)
{
	if (!c)
		return;
	munmap(c->base, c->size);
	free(c->slots);
	free(c->snap);
	free(c);
}

unsigned djp_consumer_slots_used(const struct djp_consumer *c)
{
	return slots_used((const struct djp_region_hdr *)c->base, c->h.nslots);
}

unsigned djp_consumer_nslots(const struct djp_consumer *c)
{
	return c->h.nslots;
}

unsigned djp_consumer_mode(const struct djp_consumer *c)
{
	return c->h.mode;
}

const struct djp_clock_params *djp_consumer_clock(const struct djp_consumer *c)
{
	return &c->h.clock;
}

uint64_t djp_consumer_lost_noslot(const struct djp_consumer *c)
{
	return __atomic_load_n(&((struct djp_region_hdr *)c->base)->lost_noslot, __ATOMIC_RELAXED);
}

static struct djp_slot_hdr *cslot(const struct djp_consumer *c, unsigned i)
{
	return (struct djp_slot_hdr *)(c->base + c->h.slots_offset + (uint64_t)i * c->h.slot_stride);
}

static uint8_t *cdata(const struct djp_consumer *c, unsigned i)
{
	return (uint8_t *)cslot(c, i) + c->h.slot_hdr_size;
}

int djp_consumer_slot_stats(const struct djp_consumer *c, unsigned i, struct djp_slot_stats *st)
{
	struct djp_slot_hdr *s;
	const struct consumer_slot *cs;
	uint64_t owner;

	if (i >= c->h.nslots)
		return -EINVAL;
	s = cslot(c, i);
	cs = &c->slots[i];
	owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE);
	/* a slot handed on counts from its owner record on (the counts
	 * before were the old owner's, reported when the record was read) */
	*st = (struct djp_slot_stats){
		.slot = i,
		.tid = cs->tid ? cs->tid : (uint32_t)(owner >> 32),
		.state = (uint32_t)owner,
		.generation = __atomic_load_n(&s->generation, __ATOMIC_RELAXED),
		.produced = __atomic_load_n(&s->nevents, __ATOMIC_RELAXED) - cs->base.produced,
		.delivered = cs->delivered - cs->base.delivered,
		.lost_full = __atomic_load_n(&s->lost_full, __ATOMIC_RELAXED) - cs->base.lost_full,
		.lost_nested = __atomic_load_n(&s->lost_nested, __ATOMIC_RELAXED) - cs->base.lost_nested,
		.overwritten = cs->overwritten,
		.corrupt = cs->corrupt - cs->base.corrupt,
	};
	return 0;
}

struct parse {
	const struct djp_drain_ops *ops;
	void *arg;
	unsigned slot;
	uint32_t tid;
	uint64_t deliver_from; /* events before this position were delivered */
	bool may_stop;	       /* honour a stop request from the callback */
	bool stopped;
	uint64_t events;       /* events parsed (delivered or not) */
	uint64_t delivered;
};

/* An owner record read (discard mode): the old owner's final counts go to
 * slot_done as a retired slot's would, and the events after it are the
 * new owner's.  Its words may be anything: they only make numbers. */
static void owner_record(struct djp_consumer *c, struct parse *p, const struct djp_event *ev)
{
	struct consumer_slot *cs = &c->slots[p->slot];
	struct djp_slot_hdr *s = cslot(c, p->slot);
	uint64_t delivered = cs->delivered + p->delivered;
	struct djp_slot_stats st = {
		.slot = p->slot,
		.tid = p->tid,
		.state = DJP_SLOT_RETIRED,
		.generation = __atomic_load_n(&s->generation, __ATOMIC_RELAXED),
		.produced = ev->args[2] - cs->base.produced,
		.delivered = delivered - cs->base.delivered,
		.lost_full = ev->args[3] - cs->base.lost_full,
		.lost_nested = ev->args[4] - cs->base.lost_nested,
		.corrupt = cs->corrupt - cs->base.corrupt,
	};

	if (p->ops->slot_done)
		p->ops->slot_done(p->arg, &st);
	cs->base.produced = ev->args[2] + 1; /* the record counts as an event */
	cs->base.lost_full = ev->args[3];
	cs->base.lost_nested = ev->args[4];
	cs->base.delivered = delivered;
	cs->base.corrupt = cs->corrupt;
	cs->tid = p->tid = (uint32_t)ev->args[1];
}

/* Is ev (its header and words) an owner record ("Slots handed on")? */
static bool is_owner_record(const struct djp_event *ev)
{
	return (ev->flags & DJP_EVF_OWNER) && ev->marker_id == DJP_MARKER_OWNER && ev->nargs == DJP_OWNER_NARGS;
}

/* The header of the next event at or after *pos and below to, copied into
 * *ev, past the unused tails of sub-buffers and their pads: its size, or 0
 * at the end of the range (*pos == to) or at bytes no producer writes
 * (*pos < to, where they begin). */
static inline uint32_t next_event(const struct djp_consumer *c, const uint8_t *ring, uint64_t *pos, uint64_t to,
				  struct djp_event *ev)
{
	uint64_t R = c->h.ring_size, B = c->h.subbuf_size;

	while (*pos < to) {
		uint64_t off = *pos & (B - 1);
		if (B - off < DJP_EV_HDR_SIZE) {
			*pos += B - off;
			continue;
		}
		memcpy(ev, ring + (*pos & (R - 1)), DJP_EV_HDR_SIZE);
		if (ev->flags & DJP_EVF_PAD) {
			*pos += B - off;
			continue;
		}
		if (ev->size < DJP_EV_HDR_SIZE || (ev->size & 7) || ev->size > B - off || ev->size > to - *pos ||
		    DJP_EV_HDR_SIZE + 8u * ev->nargs > ev->size)
			return 0;
		return ev->size;
	}
	*pos = to;
	return 0;
}

/* The thread whose events begin at from, for a slot the consumer has not
 * read an owner of yet: the old tid of the first owner record in [from,
 * to), or the owner word's.  The new owner publishes its record before it
 * writes the owner word, and the drain reads the owner word before head:
 * an owner word that names a taker comes with its record below head. */
static uint32_t first_owner(struct djp_consumer *c, const uint8_t *ring, uint64_t from, uint64_t to,
			    uint32_t owner_tid)
{
	struct djp_event ev;
	uint32_t size;

	for (uint64_t pos = from; (size = next_event(c, ring, &pos, to, &ev)); pos += size)
		if (is_owner_record(&ev)) {
			uint64_t old;
			memcpy(&old, ring + ((pos + DJP_EV_HDR_SIZE) & (c->h.ring_size - 1)), 8);
			return (uint32_t)old;
		}
	return owner_tid;
}

/*
 * Parse the committed events in [from, to) of a ring image (the shared ring
 * in discard mode, the private snapshot in overwrite mode), copying each
 * one out before looking at it.  Returns where parsing ended: `to`, or the
 * end of the event after which the callback asked to stop.  Anything that
 * does not parse ends the range (counted as corrupt bytes).
 */
static uint64_t parse_range(struct djp_consumer *c, const uint8_t *ring, uint64_t from, uint64_t to, struct parse *p)
{
	uint64_t R = c->h.ring_size, pos = from;
	struct djp_event *ev = (struct djp_event *)c->evbuf;
	struct consumer_slot *cs = &c->slots[p->slot];

	while (pos < to && !p->stopped) {
		uint32_t size = next_event(c, ring, &pos, to, ev);
		if (!size) {
			cs->corrupt += to - pos; /* 0 at the range's end */
			return to;
		}
		memcpy((uint8_t *)ev + DJP_EV_HDR_SIZE, ring + ((pos + DJP_EV_HDR_SIZE) & (R - 1)),
		       size - DJP_EV_HDR_SIZE);
		p->events++;
		if (ev->flags & DJP_EVF_OWNER) {
			if (is_owner_record(ev) && c->h.mode == DJP_RING_DISCARD && pos >= p->deliver_from)
				owner_record(c, p, ev);
			pos += size;
			continue;
		}
		if (pos >= p->deliver_from) {
			p->delivered++;
			if (p->ops->event(p->arg, ev, p->tid, p->slot) && p->may_stop)
				p->stopped = true;
		}
		pos += size;
	}
	return pos < to ? pos : to;
}

static void recycle(struct djp_consumer *c, unsigned i, uint64_t owner, const struct djp_drain_ops *ops, void *arg)
{
	struct djp_slot_hdr *s = cslot(c, i);
	struct djp_slot_stats st;
	uint64_t expect = owner;

	/* a thread may be taking it over: whoever moves the owner word first
	 * has it */
	if (!__atomic_compare_exchange_n(&s->owner, &expect, (owner & ~0xffffffffull) | DJP_SLOT_RECYCLING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	expect = (owner & ~0xffffffffull) | DJP_SLOT_RECYCLING;
	djp_consumer_slot_stats(c, i, &st);
	st.state = DJP_SLOT_RETIRED;
	if (ops->slot_done)
		ops->slot_done(arg, &st);
	s->head = 0;
	s->nevents = 0;
	s->lost_full = 0;
	s->lost_nested = 0;
	s->tail_cache = 0;
	s->tail = 0;
	memset(s->sb, 0, c->h.nsubbufs * sizeof(s->sb[0]));
	s->serial = 0;
	s->pid = 0;
	s->generation++;
	memset(&c->slots[i], 0, sizeof(c->slots[i]));
	__atomic_compare_exchange_n(&s->owner, &expect, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Discard mode: read [tail, head) in place. */
static uint64_t drain_in_place(struct djp_consumer *c, unsigned i, struct parse *p)
{
	struct djp_slot_hdr *s = cslot(c, i);
	struct consumer_slot *cs = &c->slots[i];
	uint64_t head = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);

	if (!cs->tid && head > cs->tail && head - cs->tail <= c->h.ring_size)
		cs->tid = first_owner(c, cdata(c, i), cs->tail, head, p->tid);
	if (cs->tid)
		p->tid = cs->tid;
	if (head < cs->tail || head - cs->tail > c->h.ring_size) {
		/* Not something a producer writes: skip it all. */
		cs->corrupt += head > cs->tail ? head - cs->tail : 0;
		cs->tail = head;
	} else {
		p->deliver_from = cs->tail;
		p->may_stop = true;
		cs->tail = parse_range(c, cdata(c, i), cs->tail, head, p);
		cs->delivered += p->delivered;
	}
	if (!c->ro)
		__atomic_store_n(&s->tail, cs->tail, __ATOMIC_RELEASE);
	return head;
}

/* Overwrite mode: copy, validate, then parse the private copy.  Returns the
 * head read, or tail unchanged when no copy validated. */
static uint64_t drain_snapshot(struct djp_consumer *c, unsigned i, struct parse *p)
{
	struct djp_slot_hdr *s = cslot(c, i);
	struct consumer_slot *cs = &c->slots[i];
	const uint64_t R = c->h.ring_size, B = c->h.subbuf_size, S = c->h.nsubbufs;
	const uint8_t *data = cdata(c, i);

	for (int attempt = 0; attempt < SNAPSHOT_TRIES; attempt++) {
		uint64_t h = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE), tail = cs->tail;
		uint64_t cur, first, k0, valid, count_cur, total, in_cur = 0;

		if (h == tail)
			return h;
		if (h < tail) {
			cs->tail = h; /* garbage */
			return h;
		}
		cur = (h - 1) >> c->sb_shift;
		first = cur >= S - 1 ? cur - (S - 1) : 0;
		k0 = tail >> c->sb_shift;
		if (k0 < first)
			k0 = first;
		/* 1. copy sub-buffers k0..cur, the last one up to h */
		for (uint64_t k = k0; k <= cur; k++) {
			uint64_t start = k << c->sb_shift, end = start + B < h ? start + B : h;
			memcpy(c->snap + (start & (R - 1)), data + (start & (R - 1)), end - start);
		}
		count_cur = __atomic_load_n(&s->sb[cur & (S - 1)].count, __ATOMIC_RELAXED);
		/* 2. validate: a sub-buffer whose seq moved on was (maybe)
		 * overwritten while we copied, and so was all that is older */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		valid = k0;
		for (uint64_t k = cur + 1; k-- > k0;) {
			if (__atomic_load_n(&s->sb[k & (S - 1)].seq, __ATOMIC_RELAXED) != k + 1) {
				valid = k + 1;
				break;
			}
		}
		if (valid > cur)
			continue;
		/* 3. parse the intact part from the copy */
		p->deliver_from = tail;
		p->may_stop = false;
		for (uint64_t k = valid; k <= cur; k++) {
			uint64_t start = k << c->sb_shift, end = start + B < h ? start + B : h, before = p->events;
			parse_range(c, c->snap, start, end, p);
			in_cur = p->events - before;
		}
		/* 4. account: events up to h, minus what was read before and now */
		total = count_cur + in_cur;
		if (cs->resumed) {
			cs->accounted = total >= p->delivered ? total - p->delivered : 0;
			cs->resumed = false;
		}
		if (total >= cs->accounted + p->delivered)
			cs->overwritten += total - cs->accounted - p->delivered;
		cs->accounted = total;
		cs->delivered += p->delivered;
		cs->tail = h;
		__atomic_store_n(&s->tail, h, __ATOMIC_RELEASE);
		return h;
	}
	return cs->tail; /* lapped during every copy: next time */
}

long djp_consumer_drain(struct djp_consumer *c, const struct djp_drain_ops *ops, void *arg)
{
	long total = 0;

	unsigned used;

	if (!ops || !ops->event)
		return -EINVAL;
	used = slots_used((const struct djp_region_hdr *)c->base, c->h.nslots);
	for (unsigned i = 0; i < used; i++) {
		struct djp_slot_hdr *s = cslot(c, i);
		uint64_t owner = __atomic_load_n(&s->owner, __ATOMIC_ACQUIRE), head;
		uint32_t state = (uint32_t)owner;
		struct parse p = { .ops = ops, .arg = arg, .slot = i, .tid = (uint32_t)(owner >> 32) };

		if (state != DJP_SLOT_ACTIVE && state != DJP_SLOT_EXITING && state != DJP_SLOT_RETIRED &&
		    state != DJP_SLOT_TAKING)
			continue;
		if (c->h.mode == DJP_RING_OVERWRITE)
			head = drain_snapshot(c, i, &p);
		else
			head = drain_in_place(c, i, &p);
		total += (long)p.delivered;
		if (state == DJP_SLOT_RETIRED && c->slots[i].tail == head && !p.stopped && !c->ro)
			recycle(c, i, owner, ops, arg);
		if (p.stopped)
			break;
	}
	return total;
}
