/* Function parameters from DWARF (lib/func_params.c) on the target program
 * selftests/progs/param_targets.c at -O2 and -O0.  The real check runs the
 * program under ptrace with a breakpoint at each function's entry, after
 * its prologue and on a line after a call inside it, and reads every
 * available location from the registers and memory of the stopped
 * program: the values must be the ones the program printed before the
 * call.  Expected names and values come from the program's output, types
 * from the tags in its source, and what the DWARF says of a dropped
 * parameter from readelf. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/func_params.h"
#include "lib/func_symbols.h"

#define PROG "progs/param_targets"
#define PROG_O0 "progs/param_targets-O0"
#define SOURCE "../../selftests/progs/param_targets.c"

#define MAX_TARGETS 32
#define MAX_PROBES (3 * MAX_TARGETS)

/* ---- the target's source: tags ---- */

/* The line of the source holding "tag: WHAT" followed by a space, a ':'
 * or the end of the comment; its number, and the text after the tag. */
static int tagged(const char *what, char *rest, size_t restsz)
{
	char want[128], line[1024];
	int n = 0, found = 0;
	FILE *f = fopen(djp_test_path(SOURCE), "r");

	CHECK(f != NULL);
	snprintf(want, sizeof(want), "tag: %s", what);
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, want);
		n++;
		if (!at || !strchr(" :*\n", at[strlen(want)]))
			continue;
		CHECK(!found);
		found = n;
		if (rest)
			snprintf(rest, restsz, "%s", at + strlen(want));
	}
	fclose(f);
	CHECK(found > 0);
	return found;
}

/* Every NAME of a "tag: types NAME:" line, in source order. */
static unsigned tagged_functions(char names[][64], unsigned max)
{
	char line[1024];
	unsigned n = 0;
	FILE *f = fopen(djp_test_path(SOURCE), "r");

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, "tag: types "), *colon;
		if (!at || !(colon = strchr(at + 11, ':')))
			continue;
		CHECK(n < max);
		snprintf(names[n++], 64, "%.*s", (int)(colon - at - 11), at + 11);
	}
	fclose(f);
	CHECK(n >= 10);
	return n;
}

/* The parameter types a function's tag lists, '|' between them. */
static unsigned tagged_types(const char *fn, char types[][128], unsigned max)
{
	char what[96], rest[1024], *s, *save = NULL;
	unsigned n = 0;

	snprintf(what, sizeof(what), "types %s", fn);
	tagged(what, rest, sizeof(rest));
	CHECK(rest[0] == ':');
	char *end = strstr(rest, " */");
	if (end)
		*end = 0;
	rest[strcspn(rest, "\n")] = 0;
	for (s = strtok_r(rest + 1, "|", &save); s; s = strtok_r(NULL, "|", &save)) {
		CHECK(n < max);
		while (*s == ' ')
			s++;
		snprintf(types[n++], 128, "%s", s);
	}
	return n;
}

/* ---- the target's output: "call NAME a=1 b=~vec ..." ---- */

struct call {
	char fn[64];
	unsigned n;
	char name[DJP_PARAMS_MAX][32];
	char val[DJP_PARAMS_MAX][32];
};

/* One "call NAME a=1 b=~vec" line into names and values. */
static void parse_call(const char *line, struct call *c)
{
	char buf[2048], *tok, *save = NULL;

	memset(c, 0, sizeof(*c));
	snprintf(buf, sizeof(buf), "%s", line);
	buf[strcspn(buf, "\n")] = 0;
	tok = strtok_r(buf, " ", &save);
	CHECK(tok && !strcmp(tok, "call"));
	tok = strtok_r(NULL, " ", &save);
	CHECK(tok != NULL);
	snprintf(c->fn, sizeof(c->fn), "%s", tok);
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');
		CHECK(eq != NULL && c->n < DJP_PARAMS_MAX);
		snprintf(c->name[c->n], 32, "%.*s", (int)(eq - tok), tok);
		snprintf(c->val[c->n], 32, "%s", eq + 1);
		c->n++;
	}
}

/* What the library says of a value the program prints as ~WHAT, at an
 * entry where the calling convention is followed. */
static const char *why_for(const char *what)
{
	if (!strcmp(what, "vec"))
		return "passed in a vector register";
	if (!strcmp(what, "float"))
		return "floating-point value";
	if (!strcmp(what, "struct"))
		return "struct passed by value";
	if (!strcmp(what, "wide"))
		return "wider than 8 bytes";
	djp_test_fail(__FILE__, __LINE__, "unknown ~%s in the program's output", what);
}

/* ---- readelf on the dropped parameter ---- */

enum dw_loc { DW_NONE_AT_ALL, DW_EXPR, DW_NOT_HERE };

/*
 * What readelf says is the DW_AT_location at pc of the formal parameter
 * named `name` (unique in the program): DW_NONE_AT_ALL (no attribute),
 * DW_NOT_HERE (a list without an entry for pc), or DW_EXPR with the
 * expression's text in expr.
 */
static enum dw_loc readelf_location(const char *path, const char *name, uint64_t pc, char *expr, size_t sz)
{
	char cmd[PATH_MAX + 64], line[1024], want[64];
	unsigned long long list = 0;
	bool is_param = false, found = false, have_list = false, in_list = false;
	enum dw_loc ret = DW_NONE_AT_ALL;
	FILE *p;

	/* " <2><17a>: Abbrev Number: 3 (DW_TAG_formal_parameter)", then its
	 * attributes, in the producer's order: "    <17b>   DW_AT_name        :
	 * (indirect string, offset: 0x3f): dropped", "DW_AT_location    : 0x6f
	 * (location list)" or "... : 1 byte block: 54 	(DW_OP_reg4 (rsi))" */
	struct {
		bool named, list;
		unsigned long long off;
		char expr[256];
	} die = { 0 };
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=info '%s'", path);
	snprintf(want, sizeof(want), ": %s\n", name);
	CHECK((p = popen(cmd, "r")) != NULL);
	for (bool more = true; more;) {
		more = fgets(line, sizeof(line), p) != NULL;
		size_t len = more ? strlen(line) : 0;
		if (!more || strstr(line, ">: Abbrev Number")) {
			if (is_param && die.named) { /* the DIE just read is the one */
				CHECK(!found);
				found = true;
				have_list = die.list;
				list = die.off;
				if (die.expr[0]) {
					snprintf(expr, sz, "%s", die.expr);
					ret = DW_EXPR;
				}
			}
			is_param = more && strstr(line, "(DW_TAG_formal_parameter)") != NULL;
			memset(&die, 0, sizeof(die));
			continue;
		}
		if (!is_param)
			continue;
		if (strstr(line, "DW_AT_name") && len > strlen(want) && !strcmp(line + len - strlen(want), want))
			die.named = true;
		if (strstr(line, "DW_AT_location")) {
			char *paren = strchr(line, '('), *ll = strstr(line, " (location list)");
			if (ll) { /* GCC ": 0x6f (location list)", clang ": (index: 0x2d): 0x838 (location list)" */
				while (ll > line && ll[-1] != ' ')
					ll--;
				CHECK(sscanf(ll, "%llx", &die.off) == 1);
				die.list = true;
			} else {
				CHECK(paren != NULL);
				snprintf(die.expr, sizeof(die.expr), "%s", paren + 1);
			}
		}
	}
	CHECK(pclose(p) == 0);
	CHECK(found);
	if (!have_list)
		return ret;

	/* The list starts at the line whose first field is its offset; its
	 * entries are "BEGIN END (EXPR)", 16 hex digits each, absolute. */
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=loc '%s'", path);
	CHECK((p = popen(cmd, "r")) != NULL);
	ret = DW_NOT_HERE;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long off, lo, hi;
		char *s = line, *end;
		if (!in_list) {
			in_list = sscanf(line, " %llx", &off) == 1 && off == list && strspn(line, " ") == 4;
			if (!in_list)
				continue;
		}
		if (strstr(line, "<End of list>"))
			break;
		/* two 16-digit numbers, then the expression */
		for (;;) {
			s += strspn(s, " ");
			lo = strtoull(s, &end, 16);
			if (end - s != 16 || *end != ' ') {
				s += strcspn(s, " ");
				if (!*s || *s == '\n')
					break;
				continue;
			}
			char *s2 = end + 1;
			hi = strtoull(s2, &end, 16);
			if (end - s2 == 16 && !strncmp(end, " (", 2)) {
				if (lo <= pc && pc < hi && ret == DW_NOT_HERE) {
					snprintf(expr, sz, "%s", end + 2);
					ret = DW_EXPR;
				}
				break;
			}
			s = s2;
		}
	}
	pclose(p);
	CHECK(in_list);
	return ret;
}

/* ---- probes ---- */

struct probe {
	const char *fn;	    /* the tag's name ("pt_clone") */
	const struct djp_func *f;
	uint64_t pc;	    /* link-time */
	bool entry, clone;
	struct djp_param_set set;
	int hits;
};

struct run {
	char path[PATH_MAX];
	struct djp_params_file *pf; /* NULL: djp_params_read a probe */
	struct djp_func_table *t;
	char names[MAX_TARGETS][64];
	unsigned nfn;
	struct probe p[MAX_PROBES];
	unsigned np;
	struct call calls[MAX_TARGETS];
	bool have_call[MAX_TARGETS];
	unsigned checked, unavailable_mid, checked_mid;
	bool dropped_checked;
};

/* djp_funcs_match callback: keep the function matched. */
static int first_match(void *ctx, const struct djp_func *f)
{
	*(const struct djp_func **)ctx = f;
	return 0;
}

/* The function of a tag: its own symbol, or a clone of it ("NAME.*"). */
static const struct djp_func *target_func(const struct djp_func_table *t, const char *name, bool *clone)
{
	const struct djp_func *f = NULL;
	char glob[96];

	*clone = false;
	if (djp_funcs_match(t, name, first_match, &f) == 1)
		return f;
	snprintf(glob, sizeof(glob), "%s.*", name);
	CHECK(djp_funcs_match(t, glob, first_match, &f) == 1);
	*clone = true;
	return f;
}

/* The first address of the function's body tag line inside it, after its
 * entry; 0 when the line has none there. */
static uint64_t body_address(const char *path, const char *fn, const struct djp_func *f)
{
	char what[96], spec[128], err[256];
	uint64_t a[16];
	int n;

	snprintf(what, sizeof(what), "body %s", fn);
	snprintf(spec, sizeof(spec), "param_targets.c:%d", tagged(what, NULL, 0));
	n = djp_lines_resolve(path, spec, a, 16, err, sizeof(err));
	if (n < 0)
		fprintf(stderr, "# %s\n", err);
	CHECK(n > 0);
	for (int i = 0; i < n; i++)
		if (a[i] > f->addr && a[i] < f->addr + f->size)
			return a[i];
	return 0;
}

/* A probe at pc (once per address and function), with the parameters
 * the library gives there, read before the program runs. */
static void add_probe(struct run *r, const char *fn, const struct djp_func *f, uint64_t pc, bool clone)
{
	char err[512];
	struct probe *p;
	int ret;

	for (unsigned i = 0; i < r->np; i++)
		if (r->p[i].f == f && r->p[i].pc == pc)
			return;
	CHECK(r->np < MAX_PROBES);
	p = &r->p[r->np++];
	*p = (struct probe){ .fn = fn, .f = f, .pc = pc, .entry = pc == f->addr, .clone = clone };
	ret = r->pf ? djp_params_get(r->pf, f->addr, pc, &p->set, err, sizeof(err))
		    : djp_params_read(r->path, f->addr, pc, &p->set, err, sizeof(err));
	if (ret)
		fprintf(stderr, "# %s\n", err);
	CHECK_EQ(ret, 0);
}

/* The names and types every probe of a function gives, against the tags. */
static void check_types(struct run *r)
{
	char types[DJP_PARAMS_MAX][128];

	for (unsigned i = 0; i < r->np; i++) {
		struct probe *p = &r->p[i];
		unsigned n = tagged_types(p->fn, types, DJP_PARAMS_MAX);
		if (p->set.n != n)
			fprintf(stderr, "# %s: %u parameters, the tag lists %u\n", p->fn, p->set.n, n);
		CHECK_EQ(p->set.n, n);
		for (unsigned k = 0; k < n; k++) {
			CHECK(p->set.v[k].name && p->set.v[k].name[0]);
			CHECK_STR(p->set.v[k].type, types[k]);
			CHECK((p->set.v[k].loc.kind == DJP_LOC_NONE) == (p->set.v[k].why != NULL));
		}
	}
}

/* Every tagged function of the program: probes at its entry, after its
 * prologue and on its body line. */
static void setup(struct run *r, const char *rel, bool one_open)
{
	char err[512];

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", djp_test_path(rel));
	if (djp_funcs_read(r->path, &r->t, err, sizeof(err)))
		djp_test_fail(__FILE__, __LINE__, "%s", err);
	if (one_open && djp_params_open(r->path, &r->pf, err, sizeof(err)))
		djp_test_fail(__FILE__, __LINE__, "%s", err);
	r->nfn = tagged_functions(r->names, MAX_TARGETS);
	for (unsigned i = 0; i < r->nfn; i++) {
		bool clone;
		const struct djp_func *f = target_func(r->t, r->names[i], &clone);
		uint64_t after = djp_func_after_prologue(r->path, f), body = body_address(r->path, r->names[i], f);
		add_probe(r, r->names[i], f, f->addr, clone);
		add_probe(r, r->names[i], f, after, clone);
		if (body)
			add_probe(r, r->names[i], f, body, clone);
	}
	check_types(r);
}

/* The sets and the symbol table. */
static void teardown(struct run *r)
{
	for (unsigned i = 0; i < r->np; i++)
		djp_params_free(&r->p[i].set);
	if (r->pf)
		djp_params_close(r->pf);
	djp_funcs_free(r->t);
}

/* ---- the traced program ---- */

struct bp {
	uint64_t addr; /* run time */
	uint8_t orig;
	bool armed;
};

/* Write one byte of the stopped process's text (an int3, or the byte it
 * replaced), keeping the old one. */
static void poke_byte(pid_t pid, uint64_t addr, uint8_t b, uint8_t *old)
{
	errno = 0;
	long w = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, NULL);
	CHECK(errno == 0);
	if (old)
		*old = (uint8_t)w;
	w = (long)(((unsigned long)w & ~0xffUL) | b);
	CHECK(ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)w) == 0);
}

/* The load bias of the program in the stopped process: where its first
 * page is mapped (a PIE is linked at 0). */
static uint64_t load_bias(pid_t pid, const char *path, bool is_dyn)
{
	char maps[64], line[PATH_MAX + 128], real[PATH_MAX], file[PATH_MAX];
	unsigned long long lo, hi, off;
	uint64_t bias = 0;
	bool found = false;
	FILE *f;

	if (!is_dyn)
		return 0;
	CHECK(realpath(path, real) != NULL);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	CHECK((f = fopen(maps, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &off, file) == 4 && !off &&
		    !strcmp(file, real) && !found) {
			bias = lo;
			found = true;
		}
	fclose(f);
	CHECK(found);
	return bias;
}

/* The register view's registers from ptrace's. */
static void view_of(const struct user_regs_struct *u, uint64_t rip, uint64_t *r)
{
	const uint64_t v[DJP_REG_COUNT] = { u->rax, u->rcx, u->rdx, u->rsi, u->rdi, u->r8,  u->r9,  u->r10, u->r11,
					    u->rbx, u->rbp, u->r12, u->r13, u->r14, u->r15, u->rsp, rip };
	memcpy(r, v, sizeof(v));
}

/* Sign- or zero-extend the low a->size bytes, as djp_arg_fetch does. */
static uint64_t extend(uint64_t v, const struct djp_argloc *a)
{
	unsigned sh = a->size >= 8 ? 0 : 64 - 8 * a->size;
	if (!sh)
		return v;
	return a->is_signed ? (uint64_t)((int64_t)(v << sh) >> sh) : (v << sh) >> sh;
}

/* The value at location a in the stopped process, as djp_arg_fetch
 * would read it there. */
static uint64_t fetch(pid_t pid, const uint64_t *regs, uint64_t bias, const struct djp_argloc *a)
{
	uint64_t addr, v = 0;

	switch (a->kind) {
	case DJP_LOC_REG:
		CHECK(a->reg >= 0 && a->reg < DJP_REG_COUNT);
		return extend(regs[a->reg] >> a->reg_shift, a);
	case DJP_LOC_IMM:
		return (uint64_t)a->disp;
	case DJP_LOC_MEM:
	case DJP_LOC_ABS:
		addr = (uint64_t)a->disp;
		if (a->kind == DJP_LOC_ABS)
			addr += bias;
		if (a->kind == DJP_LOC_MEM && a->reg != DJP_REG_NONE)
			addr += regs[a->reg];
		if (a->kind == DJP_LOC_MEM && a->index != DJP_REG_NONE)
			addr += regs[a->index] * a->scale;
		struct iovec local = { &v, a->size }, remote = { (void *)addr, a->size };
		CHECK(a->size >= 1 && a->size <= 8);
		CHECK_EQ(process_vm_readv(pid, &local, 1, &remote, 1, 0), a->size);
		return extend(v, a);
	default:
		djp_test_fail(__FILE__, __LINE__, "fetch of an unavailable location");
	}
}

/* The line "call FN ..." for the call the program is stopped in. */
static const struct call *call_of(struct run *r, FILE *out, const char *fn)
{
	char line[2048];
	unsigned i;

	for (i = 0; i < r->nfn && strcmp(r->names[i], fn); i++)
		;
	CHECK(i < r->nfn);
	while (!r->have_call[i]) {
		char want[96];
		CHECK(fgets(line, sizeof(line), out) != NULL);
		snprintf(want, sizeof(want), "call %s ", fn);
		if (!strncmp(line, want, strlen(want))) {
			parse_call(line, &r->calls[i]);
			r->have_call[i] = true;
		}
	}
	return &r->calls[i];
}

/* The reasons a DWARF location can give for an integer. */
static bool is_dwarf_reason(const char *why)
{
	return !strcmp(why, "optimized out") || !strcmp(why, "no location at this address") ||
	       !strcmp(why, "location too complex");
}

/* Every parameter of probe p, stopped there with registers regs. */
static void check_probe(struct run *r, pid_t pid, FILE *out, struct probe *p, const uint64_t *regs, uint64_t bias)
{
	const struct call *c = call_of(r, out, p->fn);
	/* at a (non-clone) entry the calling convention is followed */
	bool abi = p->entry && !p->clone;

	p->hits++;
	CHECK_EQ(p->set.n, c->n);
	for (unsigned k = 0; k < c->n; k++) {
		const struct djp_param *q = &p->set.v[k];
		const char *val = c->val[k];
		CHECK_STR(q->name, c->name[k]);
		if (val[0] == '~') {
			CHECK(q->loc.kind == DJP_LOC_NONE);
			if (abi)
				CHECK_STR(q->why, why_for(val + 1));
			continue;
		}
		if (q->loc.kind == DJP_LOC_NONE) {
			/* every integer is somewhere at the entry, unless
			 * the compiler did not pass it (check_dropped asks
			 * readelf); DWARF elsewhere may say less (GCC at -O2:
			 * entry values) */
			if (p->entry)
				fprintf(stderr, "# %s entry: %s unavailable (%s)\n", p->fn, q->name, q->why);
			CHECK(!p->entry || !strcmp(q->name, "dropped"));
			CHECK(is_dwarf_reason(q->why));
			r->unavailable_mid++;
			continue;
		}
		uint64_t got = fetch(pid, regs, bias, &q->loc), want = (uint64_t)strtoll(val, NULL, 10);
		if (got != want)
			fprintf(stderr, "# %s at 0x%llx: %s = %lld, the program passed %s (kind %u reg %d disp %lld)\n",
				p->fn, (unsigned long long)p->pc, q->name, (long long)got, val, q->loc.kind, q->loc.reg,
				(long long)q->loc.disp);
		CHECK_EQ(got, want);
		r->checked++;
		if (!p->entry)
			r->checked_mid++;
	}
}

/* The dropped parameter at a probe in pt_unused: what the library says
 * is what readelf says the DWARF says.  At the entry, where the calling
 * convention is followed, it is there unless the DWARF gives it no
 * location at all (the caller may then not pass it). */
static void check_dropped(struct run *r, const struct probe *p)
{
	char expr[512] = "";
	const struct djp_param *q = NULL;
	enum dw_loc says;

	if (strcmp(p->fn, "pt_unused"))
		return;
	for (unsigned k = 0; k < p->set.n; k++)
		if (!strcmp(p->set.v[k].name, "dropped"))
			q = &p->set.v[k];
	CHECK(q != NULL);
	says = readelf_location(r->path, "dropped", p->pc, expr, sizeof(expr));
	if (p->entry && !p->clone) {
		if (says == DW_NONE_AT_ALL)
			CHECK_STR(q->why, "optimized out");
		else
			CHECK(q->loc.kind != DJP_LOC_NONE);
		return;
	}
	switch (says) {
	case DW_NONE_AT_ALL:
		CHECK_STR(q->why, "optimized out");
		break;
	case DW_NOT_HERE:
		CHECK_STR(q->why, "no location at this address");
		break;
	case DW_EXPR:
		if (strstr(expr, "DW_OP_entry_value") || strstr(expr, "DW_OP_GNU_entry_value"))
			CHECK_STR(q->why, "location too complex");
		else if (!strncmp(expr, "DW_OP_reg", 9) || !strncmp(expr, "DW_OP_breg", 10) ||
			 !strncmp(expr, "DW_OP_fbreg", 11))
			CHECK(q->loc.kind != DJP_LOC_NONE);
		else
			fprintf(stderr, "# dropped: readelf says %s; not compared\n", expr);
		break;
	}
	r->dropped_checked = true;
}

/* Run the program with a breakpoint at every probe; check each when hit. */
static void run_traced(struct run *r)
{
	struct bp bps[MAX_PROBES];
	unsigned nbp = 0;
	int fds[2], st;
	uint64_t bias;
	pid_t pid;
	FILE *out;

	CHECK(pipe2(fds, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		dup2(fds[1], 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(r->path, r->path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	CHECK((out = fdopen(fds[0], "r")) != NULL);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP); /* at the exec */
	bias = load_bias(pid, r->path, r->t->is_dyn);
	for (unsigned i = 0; i < r->np; i++) {
		bool dup = false;
		for (unsigned j = 0; j < nbp; j++)
			dup |= bps[j].addr == r->p[i].pc + bias;
		if (dup)
			continue;
		bps[nbp] = (struct bp){ .addr = r->p[i].pc + bias, .armed = true };
		poke_byte(pid, bps[nbp].addr, 0xcc, &bps[nbp].orig);
		nbp++;
	}
	CHECK(ptrace(PTRACE_CONT, pid, NULL, NULL) == 0);
	for (;;) {
		struct user_regs_struct u;
		uint64_t regs[DJP_REG_COUNT], at;
		struct bp *b = NULL;

		CHECK_EQ(waitpid(pid, &st, 0), pid);
		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WSTOPSIG(st) != SIGTRAP) {
			CHECK(ptrace(PTRACE_CONT, pid, NULL, (void *)(long)WSTOPSIG(st)) == 0);
			continue;
		}
		CHECK(ptrace(PTRACE_GETREGS, pid, NULL, &u) == 0);
		at = u.rip - 1;
		for (unsigned j = 0; j < nbp; j++)
			if (bps[j].addr == at && bps[j].armed)
				b = &bps[j];
		if (!b)
			djp_test_fail(__FILE__, __LINE__, "a trap at 0x%llx, not a breakpoint", (unsigned long long)at);
		/* one shot: put the instruction back and run it */
		poke_byte(pid, at, b->orig, NULL);
		b->armed = false;
		u.rip = at;
		CHECK(ptrace(PTRACE_SETREGS, pid, NULL, &u) == 0);
		view_of(&u, at, regs);
		for (unsigned i = 0; i < r->np; i++)
			if (r->p[i].pc + bias == at) {
				check_probe(r, pid, out, &r->p[i], regs, bias);
				check_dropped(r, &r->p[i]);
			}
		CHECK(ptrace(PTRACE_CONT, pid, NULL, NULL) == 0);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char line[2048];
	bool done = false;
	while (fgets(line, sizeof(line), out))
		done |= !strncmp(line, "done ", 5);
	fclose(out);
	CHECK(done);
	for (unsigned i = 0; i < r->np; i++) {
		if (r->p[i].hits != 1)
			fprintf(stderr, "# %s at 0x%llx: hit %d times\n", r->p[i].fn, (unsigned long long)r->p[i].pc,
				r->p[i].hits);
		CHECK_EQ(r->p[i].hits, 1);
	}
}

/* The whole check on one build of the program; it must read enough to
 * mean something. */
static void check_values(const char *rel, bool one_open)
{
	static struct run r;

	setup(&r, rel, one_open);
	run_traced(&r);
	fprintf(stderr, "# %s: %u probes, %u values read and right (%u inside functions), %u unavailable inside\n",
		rel, r.np, r.checked, r.checked_mid, r.unavailable_mid);
	CHECK(r.checked >= 80);
	CHECK(r.checked_mid >= 20);
	CHECK(r.dropped_checked);
	teardown(&r);
}

TEST_TIMEOUT(func_params_values_O2, 60)
{
	check_values(PROG, false);
}

TEST_TIMEOUT(func_params_values_O0, 60)
{
	check_values(PROG_O0, false);
}

/* Every probe's parameters through one open file (djp_params_get, as the
 * tool reads many functions), against the values the program passes. */
TEST_TIMEOUT(func_params_values_one_open_O2, 60)
{
	check_values(PROG, true);
}

/* ---- at the entry, without running ---- */

/* At -O2, the clone GCC made of pt_clone takes its arguments as its DWARF
 * says, not as its declaration would: the constant is a constant, the one
 * the program says it passes. */
TEST(func_params_clone_uses_dwarf)
{
	char err[512], line[2048], cmd[PATH_MAX + 16];
	struct djp_func_table *t;
	struct djp_param_set s;
	const struct djp_func *f;
	struct call c = { .n = 0 };
	bool clone;
	FILE *p;

	CHECK_EQ(djp_funcs_read(djp_test_path(PROG), &t, err, sizeof(err)), 0);
	f = target_func(t, "pt_clone", &clone);
	if (!clone) {
		djp_funcs_free(t);
		SKIP("the compiler made no clone of pt_clone");
	}
	snprintf(cmd, sizeof(cmd), "'%s'", djp_test_path(PROG));
	CHECK((p = popen(cmd, "r")) != NULL);
	while (fgets(line, sizeof(line), p))
		if (!strncmp(line, "call pt_clone ", 14))
			parse_call(line, &c);
	CHECK(pclose(p) == 0);
	CHECK_EQ(c.n, 3);
	CHECK_EQ(djp_params_read(djp_test_path(PROG), f->addr, f->addr, &s, err, sizeof(err)), 0);
	CHECK_EQ(s.n, 3);
	CHECK_STR(s.v[2].name, c.name[2]);
	CHECK_EQ(s.v[2].loc.kind, DJP_LOC_IMM);
	CHECK_EQ(s.v[2].loc.disp, strtoll(c.val[2], NULL, 10));
	/* and the others where the clone has them, not a declaration's third
	 * register for k */
	CHECK_EQ(s.v[0].loc.kind, DJP_LOC_REG);
	CHECK_EQ(s.v[1].loc.kind, DJP_LOC_REG);
	djp_params_free(&s);
	djp_funcs_free(t);
}

/* ---- one open file for many functions ---- */

/* The functions readelf finds a DWARF definition with code for (a
 * DW_TAG_subprogram with an address, named or through the abstract
 * instance it is a copy of): those, and only those, have parameters to
 * read.  readelf's dump, boiled down by awk to one name a line. */
static const char dwarf_awk[] =
	"function flush() {"
	" if (t == \"DW_TAG_subprogram\") { n++; dname[n] = name; dorig[n] = orig; dlo[n] = lo }"
	" if (name != \"\") name_of[off] = name }"
	"/^ *<[0-9]+><[0-9a-f]+>: Abbrev Number: [0-9]+ [(]DW_TAG_/ { flush();"
	" off = $1; sub(/^<[0-9]+></, \"\", off); sub(/>:$/, \"\", off);"
	" t = $0; sub(/.*[(]/, \"\", t); sub(/[)].*/, \"\", t); name = \"\"; orig = \"\"; lo = 0; next }"
	"/DW_AT_name/ { name = $NF }"
	"/DW_AT_abstract_origin|DW_AT_specification/ { orig = $NF; gsub(/[<>]|0x/, \"\", orig) }"
	"/DW_AT_low_pc|DW_AT_ranges/ { lo = 1 }"
	"END { flush(); for (i = 1; i <= n; i++) {"
	" nm = dname[i] != \"\" ? dname[i] : name_of[dorig[i]]; if (nm != \"\" && dlo[i]) print nm } }";

struct many {
	struct djp_params_file *pf;
	const char *path;
	char **defined; /* sorted */
	size_t ndefined;
	unsigned ok, nodata, noent, calls, wrong;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dwarf_definitions(struct many *m)
{
	char cmd[PATH_MAX + sizeof(dwarf_awk) + 64], line[1024];
	size_t cap = 4096;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=info '%s' 2>/dev/null | awk '%s' | sort -u", m->path,
		 dwarf_awk);
	CHECK((p = popen(cmd, "r")) != NULL);
	CHECK((m->defined = malloc(cap * sizeof(*m->defined))) != NULL);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = 0;
		if (m->ndefined == cap)
			CHECK((m->defined = realloc(m->defined, (cap *= 2) * sizeof(*m->defined))) != NULL);
		CHECK((m->defined[m->ndefined++] = strdup(line)) != NULL);
	}
	CHECK(pclose(p) == 0);
	CHECK(m->ndefined > 1000);
	qsort(m->defined, m->ndefined, sizeof(*m->defined), by_name);
}

/* One function through the open handle: parameters where readelf finds
 * its definition, or an error that says which and leaves the set empty. */
static int get_one(void *ctx, const struct djp_func *f)
{
	struct many *m = ctx;
	/* a clone GCC made (NAME.constprop.0, .isra.0, .part.0) is a copy
	 * of NAME's definition; a .cold part is no function's entry */
	char base[256];
	const char *name = base;
	bool defined;
	snprintf(base, sizeof(base), "%.*s", (int)strcspn(f->name, "."), f->name);
	defined = !strstr(f->name, ".cold") && bsearch(&name, m->defined, m->ndefined, sizeof(name), by_name);
	struct djp_param_set s;
	char err[512];
	int ret = djp_params_get(m->pf, f->addr, f->addr, &s, err, sizeof(err));

	m->calls++;
	if (ret == -ENODATA || ret == -ENOENT) {
		CHECK(!strncmp(err, m->path, strlen(m->path)));
		if (ret == -ENODATA)
			m->nodata++;
		else
			m->noent++;
		CHECK(s.n == 0 && s.priv == NULL);
	} else {
		if (ret)
			fprintf(stderr, "# %s: %s\n", f->name, err);
		CHECK_EQ(ret, 0);
		m->ok++;
		djp_params_free(&s);
	}
	if ((ret == 0) != defined) {
		fprintf(stderr, "# %s at %#lx: %s, and readelf finds %s\n", f->name, (unsigned long)f->addr,
			ret ? err : "parameters", defined ? "its definition" : "none");
		m->wrong++;
	}
	return 0;
}

/* Every function of this runner (the library and the tests, built with
 * -g), through one open file. */
TEST_TIMEOUT(func_params_many_functions_one_open, 60)
{
	char path[PATH_MAX], err[512];
	struct djp_func_table *t;
	struct many m = { 0 };
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	CHECK(n > 0);
	path[n] = 0;
	m.path = path;
	dwarf_definitions(&m);
	CHECK_EQ(djp_funcs_read(path, &t, err, sizeof(err)), 0);
	CHECK_EQ(djp_params_open(path, &m.pf, err, sizeof(err)), 0);
	CHECK_EQ(djp_funcs_match(t, "*", get_one, &m), (int)t->count);
	/* and a second pass over the indexes already built */
	unsigned ok = m.ok;
	m.ok = 0;
	djp_funcs_match(t, "djp_*", get_one, &m);
	CHECK(m.ok > 50);
	djp_params_close(m.pf);
	fprintf(stderr, "# %u functions: %u with parameters read, %u without DWARF, %u not functions in it\n",
		(unsigned)t->count, ok, m.nodata, m.noent);
	/* each function has its parameters exactly where binutils finds its
	 * definition: not "more than half" */
	CHECK_EQ(m.wrong, 0);
	for (size_t i = 0; i < m.ndefined; i++)
		free(m.defined[i]);
	free(m.defined);
	djp_funcs_free(t);

	/* this function's own callee, by name: the prototype in
	 * lib/func_params.h names them so */
	struct djp_param_set s;
	const struct djp_func *f = NULL;
	CHECK_EQ(djp_funcs_read(path, &t, err, sizeof(err)), 0);
	CHECK_EQ(djp_funcs_match(t, "djp_params_get", first_match, &f), 1);
	CHECK_EQ(djp_params_read(path, f->addr, f->addr, &s, err, sizeof(err)), 0);
	char proto[512];
	FILE *h = fopen(djp_test_path("../../lib/func_params.h"), "r");
	CHECK(h != NULL);
	proto[0] = 0;
	while (fgets(proto, sizeof(proto), h) && strncmp(proto, "int djp_params_get(", 19))
		;
	size_t len = strlen(proto);
	CHECK(fgets(proto + len - 1, (int)(sizeof(proto) - len), h) != NULL); /* it goes on two lines */
	fclose(h);
	unsigned k = 0;
	for (char *p = strchr(proto, '('); p && *p && *p != ')'; k++) {
		char *end = p + strcspn(p, ",)");
		char *name = end;
		while (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z')))
			name--;
		CHECK(k < s.n);
		CHECK(!strncmp(s.v[k].name, name, (size_t)(end - name)) && !s.v[k].name[end - name]);
		p = *end == ',' ? end + 1 : end;
	}
	CHECK_EQ(k, s.n);
	CHECK_STR(s.v[0].type, "struct djp_params_file*");
	CHECK_STR(s.v[1].type, "uint64_t");
	CHECK_STR(s.v[3].type, "struct djp_param_set*");
	CHECK_STR(s.v[4].type, "char*");
	CHECK_STR(s.v[5].type, "size_t");
	djp_params_free(&s);
	djp_funcs_free(t);
}

/* ---- errors ---- */

static const struct djp_func *func_named(const struct djp_func_table *t, const char *name)
{
	const struct djp_func *f = NULL;
	CHECK_EQ(djp_funcs_match(t, name, first_match, &f), 1);
	return f;
}

/* Does readelf's .debug_aranges list a range holding addr? */
static bool aranges_cover(const char *path, uint64_t addr)
{
	char cmd[PATH_MAX + 64], line[512];
	unsigned long long a, n;
	bool any = false, cover = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=aranges '%s'", path);
	CHECK((p = popen(cmd, "r")) != NULL);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " %llx %llx", &a, &n) == 2 && strspn(line, " ") == 4 && strlen(line) > 30) {
			any = true;
			cover |= addr >= a && addr - a < n;
		}
	pclose(p);
	CHECK(any);
	return cover;
}

TEST(func_params_errors)
{
	char path[PATH_MAX], err[512], want[PATH_MAX + 64], src[PATH_MAX];
	struct djp_param_set s;
	struct djp_func_table *t;
	const struct djp_func *f, *g;

	snprintf(path, sizeof(path), "%s", djp_test_path(PROG));
	CHECK_EQ(djp_funcs_read(path, &t, err, sizeof(err)), 0);
	f = func_named(t, "pt_chars");
	g = func_named(t, "pt_ints");

	/* inside a function, not at its entry */
	CHECK_EQ(djp_params_read(path, f->addr + 1, f->addr + 1, &s, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: no DWARF entry for the function at 0x%llx", path,
		 (unsigned long long)f->addr + 1);
	CHECK_STR(err, want);
	CHECK(s.n == 0 && s.priv == NULL);

	/* a pc outside the function */
	CHECK_EQ(djp_params_read(path, f->addr, g->addr, &s, err, sizeof(err)), -EINVAL);
	CHECK(!strncmp(err, path, strlen(path)) && strchr(err, '\n') == NULL);

	/* _start comes from the C library's start files, without DWARF */
	const struct djp_func *start = func_named(t, "_start");
	if (!aranges_cover(path, start->addr)) {
		CHECK_EQ(djp_params_read(path, start->addr, start->addr, &s, err, sizeof(err)), -ENODATA);
		snprintf(want, sizeof(want), "%s: no debug information", path);
		CHECK(!strncmp(err, want, strlen(want)));
	}

	/* files that are not programs */
	snprintf(src, sizeof(src), "%s", djp_test_path(SOURCE));
	struct {
		const char *path;
		int err;
	} cases[] = { { src, -ENOEXEC }, { "/nonexistent/param_targets", -ENOENT }, { "/tmp", -EISDIR } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = cases[i].path;
		CHECK_EQ(djp_params_read(p, f->addr, f->addr, &s, err, sizeof(err)), cases[i].err);
		CHECK(!strncmp(err, p, strlen(p)) && !strncmp(err + strlen(p), ": ", 2) && err[strlen(p) + 2]);
		CHECK(strchr(err, '\n') == NULL);
	}
	/* no room for a message: still the code */
	CHECK_EQ(djp_params_read(path, f->addr + 1, f->addr + 1, &s, NULL, 0), -ENOENT);
	djp_funcs_free(t);
}

/* A copy without its debug sections: -ENODATA, for the file and for each
 * function. */
TEST(func_params_stripped_copy_is_enodata)
{
	char tmp[] = "/tmp/djp-params-stripped-XXXXXX", cmd[PATH_MAX * 2], err[512], want[PATH_MAX];
	struct djp_params_file *pf = (void *)1;
	struct djp_func_table *t;
	struct djp_param_set s;
	int fd = mkstemp(tmp), st, ret, ret2;

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-debug '%s' '%s'", djp_test_path(PROG), tmp);
	st = system(cmd);
	if (st != 0) {
		unlink(tmp);
		CHECK_EQ(st, 0);
	}
	CHECK_EQ(djp_funcs_read(djp_test_path(PROG), &t, err, sizeof(err)), 0);
	const struct djp_func *f = func_named(t, "pt_ints");
	ret = djp_params_read(tmp, f->addr, f->addr, &s, err, sizeof(err));
	ret2 = djp_params_open(tmp, &pf, NULL, 0);
	unlink(tmp);
	CHECK_EQ(ret, -ENODATA);
	snprintf(want, sizeof(want), "%s: no debug information", tmp);
	CHECK_STR(err, want);
	CHECK_EQ(ret2, -ENODATA);
	CHECK(pf == NULL);
	/* the unstripped program has them */
	CHECK_EQ(djp_params_read(djp_test_path(PROG), f->addr, f->addr, &s, err, sizeof(err)), 0);
	CHECK_EQ(s.n, 6);
	djp_params_free(&s);
	djp_funcs_free(t);
}
