/*
 * Every address an object's code can branch to.
 *
 * A jump over several instructions is safe only if nothing branches into
 * the middle of them.  The function's own branches are checked with the
 * run (insn_reloc.c, djp_insn_jump_range), but code elsewhere can branch
 * there too: GCC splits a function's unlikely paths into NAME.cold, which
 * jumps back into NAME, and a stripped object has no symbol to say which
 * cold part belongs to which function.  So the whole object is decoded
 * once, when a jump is first considered in it: every executable section,
 * linearly, restarting at each function symbol so that padding or data
 * cannot keep the decoder out of step for long, and every direct jmp, jcc
 * and call target is kept, sorted.  A run with a target strictly inside is
 * refused.  Bytes that are not code may add targets that no branch has:
 * they can only refuse a jump, never allow one.
 *
 * Indirect jumps are the other way in (indirect_targets.c has the proof):
 * the same pass adds every code address the object holds (its relocations'
 * targets, in an ET_EXEC its data words and immediates that fall in its
 * code, every rip-relative address into its code) and the entries of the
 * switch tables it recognises, and lists the indirect jumps it cannot
 * account for: a function with one of those is refused as a whole (a table
 * in one function that lands in another does not occur in compiled code).
 * Computed gotos (GCC's &&label) load whole addresses from a table that
 * the first rule covers; C++ landing pads are reached from the unwinder
 * and land after a call, at the end of a run at most.
 *
 * The analysis is made once per object, when a jump is first considered
 * in it.  Joins into a proof are checked once every target is known
 * (every branch to them, wherever it is): the walk keeps each relative
 * branch with where the instructions that run into it begin, and decodes
 * again only those that land on a join.
 *
 * The map also says which functions it knows whole: those whose start the
 * walk restarted at (a symbol of the file, or a start the caller names:
 * the functions of a separate debug file) and in which no byte failed to
 * decode.  For those the map holds every branch of the function itself,
 * so a run there needs no decode of the rest of the function
 * (djp_jump_run): python3.11's 2.8 MB of text are decoded once, not
 * twice, to arm function("*").
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "arch/x86/arch.h"
#include "arch/x86/branch_targets.h"
#include "arch/x86/indirect_targets.h"
#include "arch/x86/insn_reloc.h"
#include "arch/x86/vector_use.h"

struct targets {
	uint64_t *v;
	size_t n, cap;
};

static int push(struct targets *t, uint64_t a)
{
	if (t->n == t->cap) {
		void *nv = realloc(t->v, (t->cap = t->cap ? 2 * t->cap : 4096) * sizeof(*t->v));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
	}
	t->v[t->n++] = a;
	return 0;
}

#define WINDOW 16

/* A proof of an indirect jmp that holds if no other path joins in
 * (lo, jmp], or, reg set, if each path that joins brings a whole address
 * loaded into reg. */
struct proof {
	uint64_t lo, jmp;
	unsigned reg;
	bool failed;
};

/* A join into a proof's instructions: every branch to `at` must bring a
 * whole address in reg. */
struct need {
	uint64_t at;
	size_t proof;
};

/* A relative branch at im.code_lo + at, to im.code_lo + target: the
 * instructions that run straight into it begin `back` bytes before it.
 * Offsets into the code, 12 bytes a branch: libjvm's 800,000 keep 10 MB
 * for the length of the walk. */
struct rel {
	uint32_t target, at;
	uint8_t back;
};

struct walk {
	ZydisDecoder dec;
	struct djp_image im;
	struct targets t;    /* every target */
	struct targets held; /* those an indirect jump may go to */
	struct targets guess; /* words and immediates that may be code addresses */
	struct proof *pv;
	size_t np, capp;
	struct targets blind; /* indirect jumps not understood, then those whose proof failed */
	size_t unknown;       /* how many were not understood */
	struct need *nv;
	size_t nn;
	struct rel *rv; /* every relative branch into the code, in the walk's order */
	size_t nrel, caprel;
	bool rel_lost; /* one could not be kept */
	struct targets starts; /* where the walk restarted */
	struct targets bad;    /* where a byte did not decode, the first of each run */
};

/* A target an indirect jump may go to: a code address held as data or
 * computed, a switch table's entry. */
static int add_held(void *ctx, uint64_t a)
{
	struct walk *w = ctx;
	return push(&w->t, a) || push(&w->held, a) ? -ENOMEM : 0;
}

/* A word or immediate of an ET_EXEC that may be a code address, or a
 * string's bytes. */
static int add_guess(void *ctx, uint64_t a)
{
	struct walk *w = ctx;
	return push(&w->guess, a) || push(&w->held, a) ? -ENOMEM : 0;
}

static void window(const size_t *win, size_t nwin, size_t *offs, size_t *n)
{
	*n = nwin < WINDOW ? nwin : WINDOW;
	/* the ring, oldest first */
	for (size_t i = 0; i < *n; i++)
		offs[i] = win[(nwin - *n + i) % WINDOW];
}

static int indirect_jump(struct walk *w, const uint8_t *code, uint64_t addr, const size_t *win, size_t nwin)
{
	uint64_t lo, at = addr + win[(nwin - 1) % WINDOW];
	size_t offs[WINDOW], n;
	unsigned reg;
	int r;

	window(win, nwin, offs, &n);
	r = djp_indirect_jump_targets(&w->im, code, addr, offs, n, add_held, w, &lo, &reg);
	if (r < 0)
		return r;
	if (!r)
		return push(&w->blind, at);
	if (w->np == w->capp) {
		void *nv = realloc(w->pv, (w->capp = w->capp ? 2 * w->capp : 256) * sizeof(*w->pv));
		if (!nv)
			return -ENOMEM;
		w->pv = nv;
	}
	w->pv[w->np++] = (struct proof){ .lo = lo, .jmp = at, .reg = reg };
	return 0;
}

/* Hand each instruction of the section to fn with the window of those
 * that run straight into it (decoding restarts at function starts). */
typedef int (*insn_fn)(struct walk *w, const ZydisDecodedInstruction *in, const uint8_t *code, uint64_t addr,
		       const size_t *win, size_t nwin);

static int section_walk(struct walk *w, const uint8_t *code, size_t len, uint64_t addr, const size_t *starts,
			size_t nstarts, insn_fn fn)
{
	size_t at = 0, next = 0, win[WINDOW], nwin, run;
	int err;

	while (at < len) {
		size_t end = len;
		while (next < nstarts && starts[next] <= at)
			next++;
		if (next < nstarts)
			end = starts[next];
		nwin = 0;
		run = at;
		while (at < end) {
			/* The instruction without its operands: a relative
			 * branch's displacement is in the raw immediate, and
			 * its target the next instruction's address plus it
			 * (as ZydisCalcAbsoluteAddress computes it in 64-bit
			 * mode).  Decoding the operands too was two thirds of
			 * the walk, which is a third of arming function("*"). */
			ZydisDecodedInstruction in;
			if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&w->dec, NULL, code + at, end - at, &in))) {
				if ((nwin || at == run) && push(&w->bad, addr + at))
					return -ENOMEM;
				at++;
				nwin = 0;
				continue;
			}
			win[nwin++ % WINDOW] = at;
			if ((err = fn(w, &in, code, addr, win, nwin)))
				return err;
			at += in.length;
		}
		at = end;
	}
	return 0;
}

/* Keep the relative branch at `at`, for the joins (check_proofs).  One
 * to outside the code lands on no join there (a join outside it fails its
 * proof); one that cannot be kept as offsets (from outside the code, or
 * code that spans 4 GiB) leaves every join unchecked: they all fail. */
static int rel_push(struct walk *w, uint64_t target, uint64_t at, const size_t *win, size_t nwin, uint64_t addr)
{
	size_t n = nwin < WINDOW ? nwin : WINDOW;
	uint64_t span = w->im.code_hi - w->im.code_lo;
	if (at - w->im.code_lo >= span || span > UINT32_MAX) {
		w->rel_lost = true;
		return 0;
	}
	if (target - w->im.code_lo >= span)
		return 0;
	if (w->nrel == w->caprel) {
		void *nv = realloc(w->rv, (w->caprel = w->caprel ? 2 * w->caprel : 4096) * sizeof(*w->rv));
		if (!nv)
			return -ENOMEM;
		w->rv = nv;
	}
	/* 16 instructions of at most 15 bytes: 225 back at most */
	w->rv[w->nrel++] = (struct rel){ .target = (uint32_t)(target - w->im.code_lo),
					 .at = (uint32_t)(at - w->im.code_lo),
					 .back = (uint8_t)(at - (addr + win[(nwin - n) % WINDOW])) };
	return 0;
}

static int insn_targets(struct walk *w, const ZydisDecodedInstruction *in, const uint8_t *code, uint64_t addr,
			const size_t *win, size_t nwin)
{
	uint64_t next_ip = addr + win[(nwin - 1) % WINDOW] + in->length;

	if (in->raw.imm[0].is_relative &&
	    rel_push(w, next_ip + (uint64_t)in->raw.imm[0].value.s, next_ip - in->length, win, nwin, addr))
		return -ENOMEM;

	for (unsigned i = 0; i < 2; i++) {
		uint64_t v = (uint64_t)in->raw.imm[i].value.s;
		if (in->raw.imm[i].is_relative && push(&w->t, next_ip + v))
			return -ENOMEM;
		/* an address in an ET_EXEC's code: mov $label, %eax */
		if (!in->raw.imm[i].is_relative && in->raw.imm[i].size >= 32 && w->im.exec_type &&
		    djp_image_is_code(&w->im, in->raw.imm[i].value.u) && add_guess(w, in->raw.imm[i].value.u))
			return -ENOMEM;
	}
	/* a rip-relative operand into the code: lea label(%rip) */
	if ((in->attributes & ZYDIS_ATTRIB_HAS_MODRM) && in->raw.modrm.mod == 0 && in->raw.modrm.rm == 5 &&
	    in->address_width == 64 && djp_image_is_code(&w->im, next_ip + (uint64_t)in->raw.disp.value) &&
	    add_held(w, next_ip + (uint64_t)in->raw.disp.value))
		return -ENOMEM;
	if (in->meta.category == ZYDIS_CATEGORY_UNCOND_BR && !(in->attributes & ZYDIS_ATTRIB_IS_RELATIVE))
		return indirect_jump(w, code, addr, win, nwin);
	return 0;
}

static int section_targets(void *ctx, const uint8_t *code, size_t len, uint64_t addr, const size_t *starts,
			   size_t nstarts)
{
	struct walk *w = ctx;
	for (size_t i = 0; i < nstarts; i++)
		if (push(&w->starts, addr + starts[i]))
			return -ENOMEM;
	return section_walk(w, code, len, addr, starts, nstarts, insn_targets);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * Sort link-time addresses: a byte at a time from the lowest (LSD radix),
 * skipping the bytes all of them share, so that python3.11's 600,000
 * targets take three passes over them rather than qsort's twenty
 * comparisons each (a seventh of the map's cost).  qsort where a buffer
 * cannot be had, or for few.
 */
static void sort_u64(uint64_t *v, size_t n)
{
	uint64_t differ = 0, *tmp, *from = v, *to;
	if (n < 2)
		return;
	if (n < 1024 || !(tmp = malloc(n * sizeof(*v)))) {
		qsort(v, n, sizeof(*v), cmp_u64);
		return;
	}
	for (size_t i = 1; i < n; i++)
		differ |= v[i] ^ v[0];
	to = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, at = 0;
		if (!(differ >> shift & 0xff))
			continue;
		for (size_t i = 0; i < n; i++)
			count[from[i] >> shift & 0xff]++;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[from[i] >> shift & 0xff]++] = from[i];
		to = from;
		from = from == v ? tmp : v;
	}
	if (from != v)
		memcpy(v, from, n * sizeof(*v));
	free(tmp);
}

static int cmp_need(const void *a, const void *b)
{
	return cmp_u64(&((const struct need *)a)->at, &((const struct need *)b)->at);
}

/* The first need at `at` or after. */
static size_t need_at(const struct walk *w, uint64_t at)
{
	size_t a = 0, b = w->nn;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (w->nv[mid].at < at)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* The relative branch r lands on a join: does it bring each of its
 * proofs' values?  Its window is decoded again, from where the walk's
 * began, in the section the walk read it from. */
static void join_check(struct walk *w, const struct rel *r)
{
	uint64_t target = w->im.code_lo + r->target, at = w->im.code_lo + r->at, lo;
	size_t k = need_at(w, target), offs[WINDOW], n = 0;
	const struct djp_isec *sec = NULL;
	ZydisDecodedInstruction in = { 0 };
	bool seen = false;

	if (k == w->nn || w->nv[k].at != target)
		return;
	for (size_t i = 0; i < w->im.nsec && !sec; i++)
		if (w->im.sec[i].exec && w->im.sec[i].data && at - w->im.sec[i].addr < w->im.sec[i].size)
			sec = &w->im.sec[i];
	for (size_t off = at - r->back - (sec ? sec->addr : 0); sec && n < WINDOW && off < sec->size;
	     off += in.length) {
		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&w->dec, NULL, sec->data + off, sec->size - off, &in)))
			break;
		offs[n++] = off;
		if ((seen = sec->addr + off == at))
			break;
	}
	for (; k < w->nn && w->nv[k].at == target; k++) {
		struct proof *p = &w->pv[w->nv[k].proof];
		if (!p->failed && (!seen || in.meta.category == ZYDIS_CATEGORY_CALL ||
				   !djp_branch_brings_whole_load(sec->data, sec->addr, offs, n, p->reg, &lo) ||
				   djp_branch_target_inside(w->t.v, w->t.n, lo, at + 1)))
			p->failed = true;
	}
}

/* Which proofs hold, now that every target is known. */
static int check_proofs(struct walk *w)
{
	size_t cap = 0;
	int err = 0;

	w->unknown = w->blind.n;
	for (size_t i = 0; i < w->np; i++) {
		struct proof *p = &w->pv[i];
		if (!djp_branch_target_inside(w->t.v, w->t.n, p->lo, p->jmp + 1))
			continue;
		if (!p->reg || djp_branch_target_inside(w->held.v, w->held.n, p->lo, p->jmp + 1)) {
			p->failed = true;
			continue;
		}
		/* each join, once */
		for (uint64_t at = p->lo; djp_branch_target_inside(w->t.v, w->t.n, at, p->jmp + 1);) {
			size_t a = 0, b = w->t.n;
			while (a < b) {
				size_t mid = (a + b) / 2;
				if (w->t.v[mid] <= at)
					a = mid + 1;
				else
					b = mid;
			}
			at = w->t.v[a];
			if (w->nn == cap) {
				void *nv = realloc(w->nv, (cap = cap ? 2 * cap : 256) * sizeof(*w->nv));
				if (!nv)
					return -ENOMEM;
				w->nv = nv;
			}
			w->nv[w->nn++] = (struct need){ .at = at, .proof = i };
		}
	}
	if (w->nn) {
		qsort(w->nv, w->nn, sizeof(*w->nv), cmp_need);
		for (size_t i = 0; i < w->nrel; i++)
			join_check(w, &w->rv[i]);
		for (size_t i = 0; i < w->nn; i++)
			if (w->rel_lost || w->nv[i].at - w->im.code_lo >= w->im.code_hi - w->im.code_lo)
				w->pv[w->nv[i].proof].failed = true;
	}
	for (size_t i = 0; i < w->np && !err; i++)
		if (w->pv[i].failed)
			err = push(&w->blind, w->pv[i].jmp);
	return err;
}

static int code_addresses(const char *path, const uint64_t *starts, size_t nstarts, struct walk *w)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	Elf *elf;

	if (fd < 0)
		return -errno;
	if (!(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return -ENOEXEC;
	}
	if (!(err = djp_image_open(elf, &w->im))) {
		if (!(err = djp_data_code_addresses(&w->im, add_held, add_guess, w)) &&
		    !(err = djp_elf_code_walk_at(path, starts, nstarts, section_targets, w))) {
			sort_u64(w->t.v, w->t.n);
			sort_u64(w->held.v, w->held.n);
			sort_u64(w->guess.v, w->guess.n);
			err = check_proofs(w);
		}
		djp_image_close(&w->im);
	}
	elf_end(elf);
	close(fd);
	return err;
}

int djp_branch_targets_of_file(const char *path, const uint64_t *starts, size_t nstarts, struct djp_branch_map *m)
{
	struct walk w = { 0 };
	int err;

	*m = (struct djp_branch_map){ 0 };
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	/* Minimal decoding: the length, the mnemonic and category, whether it
	 * is relative and the raw fields (prefixes, ModRM, displacement,
	 * immediates) are all the walk reads, and Zydis's minimal mode fills
	 * them without working out operand sizes and most attributes: half
	 * the time over python3.11, the same map for every object tried
	 * (python3.11, postgres, libc, libstdc++, libjvm, gdb, bash). */
	if (ZYAN_FAILED(ZydisDecoderInit(&w.dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
	    ZYAN_FAILED(ZydisDecoderEnableMode(&w.dec, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)))
		return -ENOSYS;
	err = code_addresses(path, starts, nstarts, &w);
	free(w.held.v);
	free(w.pv);
	free(w.nv);
	free(w.rv);
	if (err) {
		free(w.t.v);
		free(w.guess.v);
		free(w.blind.v);
		free(w.starts.v);
		free(w.bad.v);
		return err;
	}
	sort_u64(w.blind.v, w.blind.n);
	sort_u64(w.starts.v, w.starts.n);
	sort_u64(w.bad.v, w.bad.n);
	m->targets = w.t.v;
	m->ntargets = w.t.n;
	m->blind = w.blind.v;
	m->nblind = w.blind.n;
	m->guess = w.guess.v;
	m->nguess = w.guess.n;
	m->indirect = w.np + w.unknown;
	m->starts = w.starts.v;
	m->nstarts = w.starts.n;
	m->bad = w.bad.v;
	m->nbad = w.bad.n;
	return 0;
}

void djp_branch_map_free(struct djp_branch_map *m)
{
	free(m->targets);
	free(m->blind);
	free(m->guess);
	free(m->starts);
	free(m->bad);
	*m = (struct djp_branch_map){ 0 };
}

bool djp_branch_target_inside(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;
	/* the first target > lo */
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (v[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && v[a] < hi;
}

/* Is an indirect jump whose targets are not known in [lo, hi)? */
static bool blind_jump_in(const struct djp_branch_map *m, uint64_t lo, uint64_t hi)
{
	return lo && djp_branch_target_inside(m->blind, m->nblind, lo - 1, hi);
}

/* A word that may be a code address, at an instruction boundary of the
 * run code[0..len) at link-time address lo other than its first: an
 * address in the middle of an instruction is no code address of compiled
 * code, whose instructions do not overlap (the run's were decoded from the
 * function's start). */
static bool guess_inside(const struct djp_branch_map *m, const uint8_t *code, unsigned len, uint64_t lo)
{
	struct djp_insn in;

	for (unsigned off = 0; off < len; off += in.len) {
		if (off && djp_branch_target_inside(m->guess, m->nguess, lo + off - 1, lo + off + 1))
			return true;
		if (djp_insn_decode(code + off, len - off, lo + off, &in) || !in.len)
			return true;
	}
	return false;
}

/* No target of the object strictly inside the run code[0..len) at
 * runtime address lo (bias below it at link time). */
static int object_clear(const struct djp_branch_map *m, const uint8_t *code, uintptr_t lo, unsigned len, uintptr_t bias,
			const char **why)
{
	if (djp_branch_target_inside(m->targets, m->ntargets, lo - bias, lo + len - bias) ||
	    guess_inside(m, code, len, lo - bias)) {
		*why = "a branch elsewhere in the object lands inside the instructions a jump would cover";
		return -EBUSY;
	}
	return 0;
}

struct before {
	const struct djp_branch_map *m;
	const uint8_t *code;
	uintptr_t start, bias;
};

static int before_clear(void *ctx, uintptr_t lo, unsigned len, const char **why)
{
	const struct before *b = ctx;
	return object_clear(b->m, b->code + (lo - b->start), lo, len, b->bias, why);
}

/* Does the map know the function at link-time lo, size bytes, whole: the
 * walk restarted at its start and decoded every byte of it?  Then it
 * holds each of the function's branches, decoded as the function's own
 * decode would.  (Another start inside it that is no boundary of its
 * decode cuts the instruction across it short: a byte that did not
 * decode.  One that is a boundary changes nothing.) */
static bool known_whole(const struct djp_branch_map *m, uint64_t lo, size_t size)
{
	return size && djp_branch_target_inside(m->starts, m->nstarts, lo - 1, lo + 1) &&
	       !djp_branch_target_inside(m->bad, m->nbad, lo - 1, lo + size);
}

int djp_jump_run(const uint8_t *code, size_t size, uintptr_t start, uintptr_t addr, const struct djp_branch_map *m,
		 uintptr_t bias, unsigned *pre, unsigned *len, const char **why)
{
	const char *w = NULL, *w2;
	struct before b = { m, code, start, bias };
	unsigned known = !m			       ? 0
			 : known_whole(m, start - bias, size) ? DJP_RUN_INDIRECT_KNOWN | DJP_RUN_BRANCHES_KNOWN
							      : DJP_RUN_INDIRECT_KNOWN;
	int err = djp_insn_jump_range_known(code, size, start, addr, known, len, &w);
	bool blind;

	if (pre)
		*pre = 0;
	if (!err && *len > DJP_SITE_MAX_LEN) {
		w = "the instructions a jump would cover are too long";
		err = -E2BIG;
	}
	if (!m) {
		if (!err) {
			w = "the object's branch targets cannot be read";
			err = -ENODATA;
		}
		goto out;
	}
	if ((blind = blind_jump_in(m, start - bias, start + size - bias)) && !err) {
		w = "the function has an indirect jump whose targets are not known (a jump table may land inside)";
		err = -EBUSY;
	}
	if (!err)
		err = object_clear(m, code + (addr - start), addr, *len, bias, &w);
	/* The function ends, or a branch lands, too soon after the site: a
	 * run that starts before it, under the same rules (its start
	 * checked against every target, as the rest of it is). */
	if ((err == -ERANGE || err == -EBUSY) && !blind && pre &&
	    !djp_insn_jump_runs_before(code, size, start, addr, true, DJP_SITE_MAX_LEN, before_clear, &b, pre, len, &w2)) {
		w = NULL;
		err = 0;
	}
out:
	if (why)
		*why = w;
	return err;
}
