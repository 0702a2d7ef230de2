/*
 * User backtraces in scripts: ubacktrace(), print_ubacktrace(),
 * sprint_ubacktrace(), print_ubacktrace_brief(), ucallers(), ustack() and
 * the usyms printers, at a jump-armed marker, an int3 probe, a function's
 * entry and return, and through the C library's qsort, against what the
 * target knows of its own stack: glibc's backtrace() (libgcc's unwinder)
 * run where the probe is, printed by the target (trace_progs/
 * ustack_target.c), the sizes nm gives the functions, the path the loader
 * gives the C library, and the bytes of the armed sites.  And djp trace,
 * tracing the same process while a script records stacks, prints what it
 * prints without one.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lib/func_symbols.h"
#include "test_trace_util.h"

#define MAXF 64

/* One line of print_ubacktrace(): " 0xADDR : NAME+0xOFF/0xSIZE [MODULE]",
 * or " 0xADDR [MODULE+0xOFF/0xSIZE]" where no symbol holds ADDR. */
struct frame {
	uint64_t addr, off, size;
	char name[128];
	char mod[PATH_MAX];
};

static const char *target(bool fp)
{
	static char buf[2][PATH_MAX];
	snprintf(buf[fp], sizeof(buf[fp]), "%s", djp_test_path(fp ? "trace_progs/ustack_target" : "trace_progs/ustack_target-nofp"));
	return buf[fp];
}

/* The line after the one that is `tag` exactly, in out; NULL when none. */
static const char *after_line(const char *out, const char *tag)
{
	size_t n = strlen(tag);
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, tag, n) && l[n] == '\n')
			return l + n + 1;
	return NULL;
}

static bool parse_frame(const char *line, struct frame *f)
{
	memset(f, 0, sizeof(*f));
	if (sscanf(line, " 0x%" SCNx64 " : %127[^+]+0x%" SCNx64 "/0x%" SCNx64 " [%4095[^]]]", &f->addr, f->name, &f->off,
		   &f->size, f->mod) == 5)
		return true;
	memset(f, 0, sizeof(*f));
	return sscanf(line, " 0x%" SCNx64 " [%4095[^+]+0x%" SCNx64 "/0x%" SCNx64 "]", &f->addr, f->mod, &f->off, &f->size) ==
	       4;
}

/* The frames print_ubacktrace() printed after the line `tag`, up to the
 * line "END"; the lines that do not parse fail the test. */
static int frames_after(const char *out, const char *tag, struct frame *f, int max)
{
	const char *l = after_line(out, tag);
	int n = 0;
	if (!l)
		djp_test_fail(__FILE__, __LINE__, "no line \"%s\" in:\n%s", tag, out);
	for (; l && strncmp(l, "END\n", 4); l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (n == max || !parse_frame(l, &f[n]))
			djp_test_fail(__FILE__, __LINE__, "not a backtrace line after \"%s\": %.*s", tag, (int)strcspn(l, "\n"), l);
		n++;
	}
	CHECK(l != NULL);
	return n;
}

/* The addresses of the target's line "bt WHAT ...". */
static int bt_of(const char *out, const char *what, uint64_t *v, int max)
{
	char tag[32];
	const char *l;
	int n = 0;
	snprintf(tag, sizeof(tag), "bt %s ", what);
	l = strstr(out, tag);
	if (!l)
		djp_test_fail(__FILE__, __LINE__, "the target printed no \"%s\": %s", tag, out);
	l += strlen(tag);
	while (*l && *l != '\n' && n < max) {
		char *end;
		v[n++] = strtoull(l, &end, 16);
		CHECK(end != l);
		l = end + strspn(end, " ");
	}
	return n;
}

/* The size nm gives function `name` of `path`. */
static uint64_t nm_size(const char *path, const char *name)
{
	char cmd[PATH_MAX + 64], line[512], sym[256];
	unsigned long long addr, size = 0, s;
	FILE *f;
	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", path);
	CHECK((f = popen(cmd, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx %*s %255s", &addr, &s, sym) == 3 && !strcmp(sym, name))
			size = s;
	pclose(f);
	if (!size)
		djp_test_fail(__FILE__, __LINE__, "nm gives no size for %s in %s", name, path);
	return size;
}

/* f is `name` of the target `real`, at an offset inside its size as nm
 * says it. */
static void check_frame(const struct frame *f, const char *name, const char *real)
{
	if (strcmp(f->name, name) || strcmp(f->mod, real))
		djp_test_fail(__FILE__, __LINE__, "frame %#" PRIx64 " is %s in %s, not %s in %s", f->addr, f->name, f->mod,
			      name, real);
	CHECK_EQ(f->size, nm_size(real, name));
	CHECK(f->off < f->size);
}

/* Frames f[from..n) are the addresses bt[bfrom..nbt), all of them. */
static void check_same_as_bt(const struct frame *f, int n, int from, const uint64_t *bt, int nbt, int bfrom)
{
	bool ok = n - from == nbt - bfrom;
	for (int i = 0; ok && from + i < n; i++)
		ok = f[from + i].addr == bt[bfrom + i];
	if (!ok) {
		for (int i = 0; i < n || i < nbt; i++)
			fprintf(stderr, "# %2d walk %#18" PRIx64 " %-28s  backtrace %#18" PRIx64 "\n", i,
				i < n ? f[i].addr : 0, i < n ? f[i].name : "", i < nbt ? bt[i] : 0);
		djp_test_fail(__FILE__, __LINE__, "the walk from frame %d is not backtrace()'s from %d", from, bfrom);
	}
}

/* `djp -c CMD -o FILE -e SCRIPT`: the script's output (from FILE) in
 * *out, malloc'd; the command's and djp's own in the returned tproc. */
static struct tproc *run_script(const char *cmd, const char *script, char **out)
{
	char path[] = "/tmp/djp-ustack-XXXXXX";
	int fd = mkstemp(path), st;
	struct tproc *p;
	FILE *f;
	long n;

	CHECK(fd >= 0);
	close(fd);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-o", path, "-c", (char *)cmd, "-e", (char *)script, NULL }, false,
		     -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp -c '%s' -e '%s': status %#x, stderr: %s", cmd, script, st, p->ebuf);
	CHECK((f = fopen(path, "r")) != NULL);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	CHECK((*out = calloc(1, (size_t)n + 1)) != NULL);
	CHECK(fread(*out, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	unlink(path);
	return p;
}

/* The value after "TAG " on its own line of out, as text (static). */
static const char *value_of(const char *out, const char *tag)
{
	static char v[8192];
	size_t n = strlen(tag);
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, tag, n) && l[n] == ' ') {
			size_t k = strcspn(l + n + 1, "\n");
			CHECK(k < sizeof(v));
			memcpy(v, l + n + 1, k);
			v[k] = 0;
			return v;
		}
	djp_test_fail(__FILE__, __LINE__, "no line \"%s ...\" in:\n%s", tag, out);
}

/* ---- at a jump-armed marker ------------------------------------------------- */

static const char marker_script[] =
	"probe process.mark(\"ut_mark\") {\n"
	"  printf(\"FULL\\n\"); print_ubacktrace(); printf(\"END\\n\")\n"
	"  printf(\"HEX %s\\n\", ubacktrace())\n"
	"  printf(\"SIMPLE\\n%sEND\\n\", sprint_ubacktrace())\n"
	"  printf(\"BRIEF\\n\"); print_ubacktrace_brief(); printf(\"END\\n\")\n"
	"  printf(\"SITE %x\\n\", uaddr())\n"
	"}\n";

/* The stack at the marker in ut_c, as each function gives it: the frames
 * ut_c (at the marker, which the agent names), ut_b, ut_a, main, then
 * the C library's start and _start, as backtrace() saw them from ut_c;
 * ubacktrace() the same addresses, sprint_ubacktrace() and
 * print_ubacktrace_brief() the same names and offsets. */
static void marker_backtraces(bool fp)
{
	char cmd[2 * PATH_MAX + 32], real[PATH_MAX], *out, want[PATH_MAX + 300];
	struct frame f[MAXF];
	uint64_t bt[MAXF];
	int n, nbt;
	const char *hex, *simple, *brief;
	struct tproc *p;

	CHECK(realpath(target(fp), real) != NULL);
	snprintf(cmd, sizeof(cmd), "%s chain 1", target(fp));
	p = run_script(cmd, marker_script, &out);
	nbt = bt_of(p->obuf, "c", bt, MAXF);
	n = frames_after(out, "FULL", f, MAXF);
	CHECK(n >= 4);
	check_frame(&f[0], "ut_c", real);
	CHECK_EQ(f[0].addr, strtoull(value_of(out, "SITE"), NULL, 16));
	check_frame(&f[1], "ut_b", real);
	check_frame(&f[2], "ut_a", real);
	check_frame(&f[3], "main", real);
	check_same_as_bt(f, n, 1, bt, nbt, 1);
	/* ubacktrace(): each address in hex and a space, as stap's */
	hex = value_of(out, "HEX");
	want[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "0x%" PRIx64 " ", f[i].addr);
	CHECK_STR(hex, want);
	/* sprint_ubacktrace(): name+0xoff [basename]; the brief: name+0xoff */
	simple = after_line(out, "SIMPLE");
	brief = after_line(out, "BRIEF");
	CHECK(simple && brief);
	for (int i = 0; i < n; i++) {
		char line[PATH_MAX + 200];
		const char *base = strrchr(f[i].mod, '/') ? strrchr(f[i].mod, '/') + 1 : f[i].mod;
		if (f[i].name[0])
			snprintf(line, sizeof(line), "%s+0x%" PRIx64 " [%s]\n", f[i].name, f[i].off, base);
		else
			snprintf(line, sizeof(line), "0x%" PRIx64 " [%s+0x%" PRIx64 "]\n", f[i].addr, base, f[i].off);
		CHECK(!strncmp(simple, line, strlen(line)));
		simple += strlen(line);
		if (f[i].name[0])
			snprintf(line, sizeof(line), "%s+0x%" PRIx64 "\n", f[i].name, f[i].off);
		else
			snprintf(line, sizeof(line), "0x%" PRIx64 "\n", f[i].addr);
		CHECK(!strncmp(brief, line, strlen(line)));
		brief += strlen(line);
	}
	CHECK(!strncmp(simple, "END\n", 4));
	CHECK(!strncmp(brief, "END\n", 4));
	free(out);
	free(p);
}

TEST_TIMEOUT(script_ubacktrace_at_a_marker_with_frame_pointers, 90)
{
	marker_backtraces(true);
}

TEST_TIMEOUT(script_ubacktrace_at_a_marker_without_frame_pointers, 90)
{
	marker_backtraces(false);
}

/* ---- ucallers(), ustack(), the usyms printers; outside a hit -------------------- */

TEST_TIMEOUT(script_ucallers_ustack_and_usyms, 90)
{
	char cmd[2 * PATH_MAX + 32], *out, want[8192];
	const char *hex;
	struct frame f[MAXF], g[MAXF];
	struct tproc *p;
	int n;

	snprintf(cmd, sizeof(cmd), "%s chain 1", target(false));
	p = run_script(cmd,
		       "probe process.mark(\"ut_mark\") {\n"
		       "  printf(\"FULL\\n\"); print_ubacktrace(); printf(\"END\\n\")\n"
		       "  printf(\"HEX %s\\n\", ubacktrace())\n"
		       "  printf(\"C0 %s\\nC1 %s\\nCALL %s\\n\", ucallers(0), ucallers(1), ucallers(-1))\n"
		       "  printf(\"S2 %x\\nSNEG %x\\n\", ustack(2), ustack(-3))\n"
		       "  try { ucallers(50) } catch (e) { printf(\"E50 %s\\n\", e) }\n"
		       "  try { ustack(50) } catch (e) { printf(\"ES50 %s\\n\", e) }\n"
		       "  printf(\"USYMS\\n%sEND\\n\", sprint_usyms(ucallers(-1)))\n"
		       "  printf(\"PUSTACK\\n\"); print_ustack(ubacktrace()); printf(\"END\\n\")\n"
		       "}\n"
		       "probe begin {\n"
		       "  printf(\"BEGIN\\n\"); print_ubacktrace(); printf(\"END\\n\")\n"
		       "  printf(\"BHEX [%s]\\n\", ubacktrace())\n"
		       "  printf(\"BCALL [%s]\\n\", ucallers(-1))\n"
		       "  try { ucallers(0) } catch (e) { printf(\"BE0 %s\\n\", e) }\n"
		       "}\n",
		       &out);
	n = frames_after(out, "FULL", f, MAXF);
	CHECK(n >= 4);
	/* ucallers(k): frames 0..k, space-separated; -1 all of them */
	snprintf(want, sizeof(want), "0x%" PRIx64, f[0].addr);
	CHECK_STR(value_of(out, "C0"), want);
	snprintf(want, sizeof(want), "0x%" PRIx64 " 0x%" PRIx64, f[0].addr, f[1].addr);
	CHECK_STR(value_of(out, "C1"), want);
	hex = value_of(out, "HEX");
	snprintf(want, sizeof(want), "%s", hex);
	CHECK(strlen(want) > 0 && want[strlen(want) - 1] == ' ');
	want[strlen(want) - 1] = 0;
	CHECK_STR(value_of(out, "CALL"), want);
	/* ustack(k): frame k; a negative k is frame 0, as stap's fallback */
	CHECK_EQ(strtoull(value_of(out, "S2"), NULL, 16), f[2].addr);
	CHECK_EQ(strtoull(value_of(out, "SNEG"), NULL, 16), f[0].addr);
	CHECK(strstr(value_of(out, "E50"), "reached end of stack before unwinding to level 50") != NULL);
	CHECK(strstr(value_of(out, "ES50"), "reached end of stack before unwinding to level 50") != NULL);
	/* print_ustack() and sprint_usyms(): " 0xADDR : usymdata" a line, as
	 * print_ubacktrace() names them; the string ends before the first
	 * line that would make it longer than 511 bytes */
	CHECK_EQ(frames_after(out, "PUSTACK", g, MAXF), n);
	for (int i = 0; i < n; i++)
		CHECK(g[i].addr == f[i].addr && !strcmp(g[i].name, f[i].name) && g[i].off == f[i].off &&
		      g[i].size == f[i].size && !strcmp(g[i].mod, f[i].mod));
	{
		int k = frames_after(out, "USYMS", g, MAXF);
		const char *from = after_line(out, "USYMS"), *pu = after_line(out, "PUSTACK");
		size_t len = (size_t)(strstr(from, "END\n") - from), next = 0;
		CHECK(k >= 1 && k <= n && len <= 511);
		CHECK(!strncmp(from, pu, len)); /* the same lines */
		if (k < n) {
			for (int i = 0; i <= k; i++, pu = strchr(pu, '\n') + 1)
				next = (size_t)(strchr(pu, '\n') + 1 - after_line(out, "PUSTACK"));
			CHECK(next > 511);
		}
	}
	/* in begin there is no user stack: what stap's runtime says, "" and
	 * the end of the stack before level 0 */
	CHECK(strstr(out, "BEGIN\n<no user backtrace at begin>\nEND\n") != NULL);
	CHECK(strstr(out, "BHEX []\n") != NULL);
	CHECK(strstr(out, "BCALL []\n") != NULL);
	CHECK(strstr(value_of(out, "BE0"), "reached end of stack before unwinding to level 0") != NULL);
	free(out);
	free(p);
}

/* ---- at a function's entry and return ------------------------------------------- */

/* Frames a[from..na) are b[bfrom..nb), all of them. */
static void check_same_frames(const struct frame *a, int na, int from, const struct frame *b, int nb, int bfrom)
{
	bool ok = na - from == nb - bfrom;
	for (int i = 0; ok && from + i < na; i++)
		ok = a[from + i].addr == b[bfrom + i].addr && !strcmp(a[from + i].name, b[bfrom + i].name);
	if (!ok)
		djp_test_fail(__FILE__, __LINE__, "frames from %d (%s) are not the other walk's from %d (%s)", from,
			      from < na ? a[from].name : "none", bfrom, bfrom < nb ? b[bfrom].name : "none");
}

/*
 * An instruction probe's view has every register but %rip (the entry):
 * its walk is backtrace()'s.  With a return probe on the function too,
 * its return is diverted (the target's own backtrace() then stops at the
 * return trampoline, so the entry's walk is what the others are held
 * to): a marker inside it still walks to main, and the return's stack is
 * the caller's, from the address returned to, after what returned, as
 * stap's print_ubacktrace() says it.
 */
TEST_TIMEOUT(script_ubacktrace_at_function_entry_and_return, 90)
{
	char cmd[2 * PATH_MAX + 32], real[PATH_MAX], *out;
	struct frame f[MAXF], m[MAXF], r[MAXF];
	uint64_t bt[MAXF];
	const char *l;
	struct tproc *p;
	int n, nm, nr, nbt;

	CHECK(realpath(target(true), real) != NULL);
	snprintf(cmd, sizeof(cmd), "%s chain 1", target(true));
	p = run_script(cmd, "probe process.function(\"ut_c\") { printf(\"ENTRY\\n\"); print_ubacktrace(); printf(\"END\\n\") }\n",
		       &out);
	nbt = bt_of(p->obuf, "c", bt, MAXF);
	n = frames_after(out, "ENTRY", f, MAXF);
	check_frame(&f[0], "ut_c", real);
	CHECK_EQ(f[0].off, 0);
	check_frame(&f[1], "ut_b", real);
	check_same_as_bt(f, n, 1, bt, nbt, 1);
	free(out);
	free(p);

	p = run_script(cmd,
		       "probe process.function(\"ut_c\") { printf(\"ENTRY\\n\"); print_ubacktrace(); printf(\"END\\n\") }\n"
		       "probe process.mark(\"ut_mark\") { printf(\"MARK\\n\"); print_ubacktrace(); printf(\"END\\n\") }\n"
		       "probe process.function(\"ut_c\").return {\n"
		       "  printf(\"RET\\n\"); print_ubacktrace(); printf(\"END\\n\")\n"
		       "  printf(\"RETBRIEF\\n\"); print_ubacktrace_brief(); printf(\"END\\n\")\n"
		       "}\n",
		       &out);
	n = frames_after(out, "ENTRY", f, MAXF);
	check_frame(&f[0], "ut_c", real);
	check_frame(&f[1], "ut_b", real);
	nm = frames_after(out, "MARK", m, MAXF);
	check_frame(&m[0], "ut_c", real);
	check_same_frames(m, nm, 1, f, n, 1);
	/* "Returning from:  0x... : ut_c+0x0/...", then "Returning to  : "
	 * and the stack from the address returned to, in ut_b */
	l = after_line(out, "RET");
	CHECK(l && !strncmp(l, "Returning from: ", 16));
	CHECK(parse_frame(l + 16, &r[0]));
	CHECK_EQ(r[0].addr, f[0].addr);
	check_frame(&r[0], "ut_c", real);
	l = strchr(l, '\n') + 1;
	CHECK(!strncmp(l, "Returning to  : ", 16));
	for (nr = 0; strncmp(l, "END\n", 4); l = strchr(l, '\n') + 1, nr++)
		CHECK(nr < MAXF && parse_frame(l + (nr ? 0 : 16), &r[nr]));
	check_frame(&r[0], "ut_b", real);
	check_same_frames(r, nr, 0, f, n, 1);
	/* the brief form has no such lines */
	l = after_line(out, "RETBRIEF");
	CHECK(l && !strncmp(l, "ut_b+0x", 7));
	free(out);
	free(p);
}

/* ---- through the C library ------------------------------------------------------ */

/* A qsort comparator's marker: the comparator, qsort's frames in the C
 * library the loader mapped, then its caller ut_sort and main, as
 * backtrace() saw them from the comparator. */
TEST_TIMEOUT(script_ubacktrace_through_qsort, 90)
{
	char cmd[2 * PATH_MAX + 32], real[PATH_MAX], libc[PATH_MAX], *out;
	struct frame f[MAXF];
	uint64_t bt[MAXF];
	struct tproc *p;
	int n, nbt, k;

	CHECK(realpath(target(false), real) != NULL);
	snprintf(cmd, sizeof(cmd), "%s sort", target(false));
	p = run_script(cmd,
		       "global n\n"
		       "probe process.mark(\"ut_cmp_mark\") { if (!n++) { printf(\"CMP\\n\"); print_ubacktrace(); "
		       "printf(\"END\\n\") } }\n",
		       &out);
	CHECK(realpath(value_of(p->obuf, "libc"), libc) != NULL);
	nbt = bt_of(p->obuf, "cmp", bt, MAXF);
	n = frames_after(out, "CMP", f, MAXF);
	check_frame(&f[0], "ut_cmp", real);
	check_same_as_bt(f, n, 1, bt, nbt, 1);
	for (k = 1; k < n && !strcmp(f[k].mod, libc); k++)
		;
	if (k < 2)
		djp_test_fail(__FILE__, __LINE__, "frame 1 is %s in %s, not in the C library %s", f[1].name, f[1].mod, libc);
	check_frame(&f[k], "ut_sort", real);
	check_frame(&f[k + 1], "main", real);
	free(out);
	free(p);
}

/* ---- attached: the sites' bytes --------------------------------------------------- */




/* Read p's stdout until it holds `count` times `needle`. */
static void wait_count(struct tproc *p, const char *needle, int count)
{
	for (int i = 0; i < 1000 && tt_count(p->obuf, needle) < count; i++)
		tt_wait_out(p, "\n\n", 20); /* reads what there is */
	CHECK_EQ(tt_count(p->obuf, needle), count);
}

/*
 * A running process: the marker is jump-armed (its site holds a jump,
 * and its arguments read neither %rsp nor %rbp, which its trampoline then
 * saves for the stack walk), ut_d's entry is an int3 probe (a loop goes
 * back into the bytes a jump would cover): both walk to main, as
 * backtrace() did from ut_c.
 */
TEST_TIMEOUT(script_ubacktrace_attached_at_jump_and_int3_sites, 90)
{
	char pid[32], real[PATH_MAX];
	struct tproc *t, *d;
	struct frame f[MAXF];
	uint64_t bt[MAXF];
	uintptr_t mark, entry;
	int n, nbt, st, was;

	CHECK(realpath(target(true), real) != NULL);
	t = tt_spawn((char *const[]){ (char *)target(true), NULL }, true, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	mark = tt_site_addr(t->pid, "ut_mark");
	entry = tt_func_addr(t->pid, target(true), "ut_d");
	was = tt_byte_at(t->pid, entry);
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", pid, "-e",
				      "probe process.mark(\"ut_mark\") { printf(\"MARK\\n\"); print_ubacktrace(); "
				      "printf(\"END\\n\") }\n"
				      "probe process.function(\"ut_d\") { printf(\"INT3\\n\"); print_ubacktrace(); "
				      "printf(\"END\\n\") }\n",
				      NULL },
		     false, -1);
	tt_wait_byte(t->pid, mark, 0xe9, 10000);
	tt_wait_byte(t->pid, entry, 0xcc, 10000);
	tt_send(t, "chain 1\n");
	CHECK(tt_wait_out(t, "done", 20000));
	wait_count(d, "\nEND\n", 2);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	nbt = bt_of(t->obuf, "c", bt, MAXF);
	n = frames_after(d->obuf, "MARK", f, MAXF);
	check_frame(&f[0], "ut_c", real);
	check_frame(&f[3], "main", real);
	check_same_as_bt(f, n, 1, bt, nbt, 1);
	n = frames_after(d->obuf, "INT3", f, MAXF);
	check_frame(&f[0], "ut_d", real);
	CHECK_EQ(f[0].addr, entry);
	check_frame(&f[1], "ut_c", real);
	check_frame(&f[4], "main", real);
	check_same_as_bt(f, n, 2, bt, nbt, 1);
	/* the tool gone, the bytes are back */
	tt_wait_byte(t->pid, entry, was, 10000);
	tt_end(t);
}

/* ---- djp trace beside a script that records stacks ----------------------------- */

/* Two sessions on one process: djp trace and a script whose probe records
 * the stack at the same marker.  The trace's rows and summary are what
 * they are alone: one row a hit, no other. */
TEST_TIMEOUT(trace_beside_a_script_recording_stacks, 90)
{
	char pid[32], *line;
	struct tproc *t, *tr, *sc;
	unsigned long long events, lost;
	uintptr_t mark;
	int st, rows = 0;

	t = tt_spawn((char *const[]){ (char *)target(false), NULL }, true, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	mark = tt_site_addr(t->pid, "ut_mark");
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	tr = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "ut_mark", NULL }, false, -1);
	tt_wait_byte(t->pid, mark, 0xe9, 10000);
	sc = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", pid, "-e",
				       "global armed\n"
				       "probe timer.ms(20) { if (!armed++) printf(\"armed\\n\") }\n"
				       "probe process.mark(\"ut_mark\") { print_ubacktrace(); printf(\"END\\n\") }\n",
				       NULL },
		      false, -1);
	CHECK(tt_wait_out(sc, "armed\n", 20000));
	tt_send(t, "chain 5\n");
	CHECK(tt_wait_out(t, "done", 20000));
	wait_count(sc, "\nEND\n", 5);
	wait_count(tr, " ut_mark d=2\n", 5);
	kill(sc->pid, SIGINT);
	kill(tr->pid, SIGINT);
	st = tt_finish(sc, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = tt_finish(tr, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(sc->obuf, " : ut_c+0x"), 5);
	/* every line of the trace is a row of ut_mark */
	for (line = tr->obuf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strstr(line, " ut_mark d=2\n") || strstr(line, " ut_mark d=2\n") > strchr(line, '\n'))
			djp_test_fail(__FILE__, __LINE__, "not a row of ut_mark: %.*s", (int)strcspn(line, "\n"), line);
		rows++;
	}
	CHECK_EQ(rows, 5);
	CHECK(tt_summary_row(tr->ebuf, "ut_mark", &events, &lost));
	CHECK_EQ(events, 5);
	CHECK_EQ(lost, 0);
	tt_end(t);
}
