/* Every kind of argument location (trace_progs/argkinds_target.c: a
 * register of each width and sign, %rsp- and %rbp-relative memory, a
 * global through %rip and by its absolute address, an immediate, base
 * plus scaled index, a symbol as displacement) read exactly, under every
 * way a site is armed: a 1-byte SDT nop widened into a jump, a marker's
 * jump, int3, an instruction probe at the probe's address, a line probe
 * and a return probe with parameters on the stack; by djp trace (the
 * recorder, in lean trampolines with and without the argument prefetch)
 * and by in-process handlers in full and lean trampolines and int3.  The
 * program prints what each firing must read; each event must say the
 * same, and every firing must have its event. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "lib/func_symbols.h"
#include "test_trace_util.h"

#define ROUNDS 3
#define MAX_VALS 12
#define MAX_LINES 256

struct ak_line {
	char key[64]; /* the probe ("rsp"), or "params" for ak_params' */
	int n;
	int64_t v[MAX_VALS];
	bool has[MAX_VALS];
};

struct ak_out {
	struct ak_line want[MAX_LINES], got[MAX_LINES];
	int nwant, ngot;
};

static const char *prog(const char *name)
{
	static char p[8][4096];
	static int k;
	char *r = p[k++ % 8];
	snprintf(r, sizeof(p[0]), "%s", djp_test_path(name));
	return r;
}

/* A field's index: argN, or ak_params' a..h and return. */
static int field_index(const char *f, size_t len)
{
	if (len > 3 && !strncmp(f, "arg", 3))
		return atoi(f + 3) - 1;
	if (len == 1 && f[0] >= 'a' && f[0] <= 'h')
		return f[0] - 'a';
	if (len == 6 && !strncmp(f, "return", 6))
		return 8;
	return -1;
}

/* The program's lines ("argkinds:NAME V..." and "hit NAME V...") and
 * djp trace's events ("TIME PID TID NAME field=V ..."). */
static void parse(const char *out, struct ak_out *o)
{
	memset(o, 0, sizeof(*o));
	for (const char *l = out; *l;) {
		const char *e = strchr(l, '\n');
		char line[1024], *tok, *save = NULL, *name;
		struct ak_line *x = NULL;
		int i = 0;
		snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
		l = e ? e + 1 : l + strlen(l);
		tok = strtok_r(line, " ", &save);
		if (!tok)
			continue;
		if (!strncmp(tok, "argkinds:", 9) && o->nwant < MAX_LINES) {
			x = &o->want[o->nwant++];
			snprintf(x->key, sizeof(x->key), "%s", tok + 9);
		} else if (!strcmp(tok, "hit") && (name = strtok_r(NULL, " ", &save)) && o->ngot < MAX_LINES) {
			x = &o->got[o->ngot++];
			snprintf(x->key, sizeof(x->key), "%s", name);
		} else if (strchr(tok, '.') && strtok_r(NULL, " ", &save) && strtok_r(NULL, " ", &save) &&
			   (name = strtok_r(NULL, " ", &save)) && o->ngot < MAX_LINES) {
			x = &o->got[o->ngot++];
			if (!strncmp(name, "argkinds:", 9))
				name += 9;
			else if (!strncmp(name, "func:ak_params", 14))
				name = "params";
			snprintf(x->key, sizeof(x->key), "%s", name);
			while ((tok = strtok_r(NULL, " ", &save))) {
				char *eq = strchr(tok, '=');
				int k = eq ? field_index(tok, (size_t)(eq - tok)) : -1;
				if (k < 0 || k >= MAX_VALS)
					continue;
				x->v[k] = (int64_t)strtoull(eq + 1, NULL, 0);
				x->has[k] = true;
				if (k + 1 > x->n)
					x->n = k + 1;
			}
			continue;
		}
		if (!x)
			continue;
		while ((tok = strtok_r(NULL, " ", &save)) && i < MAX_VALS) {
			x->v[i] = strtoll(tok, NULL, 10);
			x->has[i++] = true;
		}
		x->n = i;
	}
}

/*
 * Each probe in `keys` (space-separated; "params" for ak_params'): as
 * many events as firings, in order, each with the values its firing
 * printed; `need` lists the fields an event must have (NULL: all).
 * Returns how many values were compared.
 */
static int compare(const struct ak_out *o, const char *keys, const char *what, const int *need, int nneed)
{
	char list[512], *key, *save = NULL;
	int compared = 0, wrong = 0;

	snprintf(list, sizeof(list), "%s", keys);
	for (key = strtok_r(list, " ", &save); key; key = strtok_r(NULL, " ", &save)) {
		int w = 0, g = 0;
		for (;; w++, g++) {
			while (w < o->nwant && strcmp(o->want[w].key, key))
				w++;
			while (g < o->ngot && strcmp(o->got[g].key, key))
				g++;
			if (w >= o->nwant || g >= o->ngot)
				break;
			const struct ak_line *a = &o->want[w], *b = &o->got[g];
			for (int k = 0; k < a->n; k++) {
				bool needed = !need;
				for (int j = 0; need && j < nneed; j++)
					needed |= need[j] == k;
				if (!b->has[k]) {
					if (needed && wrong++ < 10)
						fprintf(stderr, "# %s: %s: no value %d\n", what, key, k + 1);
					continue;
				}
				compared++;
				if (b->v[k] != a->v[k] && wrong++ < 10)
					fprintf(stderr, "# %s: %s: value %d is %lld, the program says %lld\n", what, key,
						k + 1, (long long)b->v[k], (long long)a->v[k]);
			}
		}
		if (w < o->nwant || g < o->ngot) {
			int nw = 0, ng = 0;
			for (int i = 0; i < o->nwant; i++)
				nw += !strcmp(o->want[i].key, key);
			for (int i = 0; i < o->ngot; i++)
				ng += !strcmp(o->got[i].key, key);
			fprintf(stderr, "# %s: %s: %d events for %d firings\n", what, key, ng, nw);
			wrong++;
		}
	}
	if (wrong)
		djp_test_fail(__FILE__, __LINE__, "%s: %d values or events wrong", what, wrong);
	return compared;
}

#define SDT_PROBES "reg_s reg_u reg_cs reg_hi rsp rbp rip abs imm index dirty many"
/* values compared for SDT_PROBES, ROUNDS firings each */
#define SDT_VALUES (ROUNDS * (11 * 4 + 6))

/* `djp trace [opt] -c "PROG ROUNDS" PATTERNS...`, parsed. */
static void trace_c(struct ak_out *o, const char *opt, const char *target, char *const patterns[])
{
	char cmd[4200];
	char *argv[24];
	int n = 0, st;
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s %d", target, ROUNDS);
	argv[n++] = (char *)tt_djp();
	argv[n++] = "trace";
	if (opt)
		argv[n++] = (char *)opt;
	argv[n++] = "-c";
	argv[n++] = cmd;
	for (int i = 0; patterns[i] && n < 23; i++)
		argv[n++] = patterns[i];
	argv[n] = NULL;
	p = tt_spawn(argv, false, -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp trace %s: status %#x: %s", target, st, p->ebuf);
	CHECK(strstr(p->obuf, "\ndone\n") != NULL);
	parse(p->obuf, o);
	free(p);
}

/* `djp trace -x` on the program waiting (-w), once every site of
 * `names` holds a jump: the arming a test means is the one it gets. */
static void trace_x_jumps(struct ak_out *o, const char *target, const char *pattern, const char *names)
{
	struct tproc *t, *d;
	char pid[32], list[512], *name, *save = NULL;
	int sites = 0, st;

	t = tt_spawn((char *const[]){ (char *)target, "-w", "3", NULL }, false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	d = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, (char *)pattern, NULL }, false, -1);
	snprintf(list, sizeof(list), "%s", names);
	for (name = strtok_r(list, " ", &save); name; name = strtok_r(NULL, " ", &save), sites++)
		tt_wait_byte(t->pid, tt_site_addr(t->pid, name), 0xe9, 20000);
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "\ndone\n", 20000));
	/* every event the firings made, then stop */
	for (int i = 0; i < 1000 && tt_count(d->obuf, "\n") < sites * ROUNDS; i++)
		tt_wait_out(d, "\n\n", 20);
	kill(d->pid, SIGINT);
	st = tt_finish(d, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	{
		/* the program's lines and the tool's events, together */
		size_t n = strlen(t->obuf);
		char *all = malloc(n + strlen(d->obuf) + 1);
		CHECK(all != NULL);
		memcpy(all, t->obuf, n);
		strcpy(all + n, d->obuf);
		parse(all, o);
		free(all);
	}
	tt_end(t);
	free(d);
}

static struct ak_out out;

/* python's gc__start reads -4@112(%rsp) through a widened SDT nop: the
 * argument prefetch of a trampoline that keeps the flags read its %rsp
 * slots 144 bytes off. */
TEST_TIMEOUT(argkinds_sdt_widened_jump, 90)
{
	static const char *names = "argkinds:reg_s argkinds:reg_u argkinds:reg_cs argkinds:reg_hi argkinds:rsp "
				   "argkinds:rbp argkinds:rip argkinds:abs argkinds:imm argkinds:index argkinds:dirty "
				   "argkinds:many";
	trace_x_jumps(&out, prog("trace_progs/argkinds_target"), "argkinds:*", names);
	CHECK_EQ(compare(&out, SDT_PROBES, "widened SDT nops", NULL, 0), SDT_VALUES);
}

TEST_TIMEOUT(argkinds_sdt_int3, 60)
{
	trace_c(&out, "--int3", prog("trace_progs/argkinds_target"), (char *const[]){ "argkinds:*", NULL });
	CHECK_EQ(compare(&out, SDT_PROBES, "SDT int3", NULL, 0), SDT_VALUES);
}

TEST_TIMEOUT(argkinds_marker_jump, 90)
{
	trace_x_jumps(&out, prog("trace_progs/argkinds_target-mark"), "*", SDT_PROBES);
	CHECK_EQ(compare(&out, SDT_PROBES, "marker jumps", NULL, 0), SDT_VALUES);
}

TEST_TIMEOUT(argkinds_marker_int3, 60)
{
	trace_c(&out, "--int3", prog("trace_progs/argkinds_target-mark"), (char *const[]){ "*", NULL });
	CHECK_EQ(compare(&out, SDT_PROBES, "marker int3", NULL, 0), SDT_VALUES);
}

/* A symbol as the displacement of base and index registers: code that is
 * not position independent. */
TEST_TIMEOUT(argkinds_not_position_independent, 60)
{
	trace_c(&out, NULL, prog("trace_progs/argkinds_target-nopie"), (char *const[]){ "argkinds:*", NULL });
	CHECK_EQ(compare(&out, SDT_PROBES " symidx", "no PIE", NULL, 0), SDT_VALUES + ROUNDS * 4);
}

/* func:FUNC+OFF at each probe's nop is that probe's site. */
TEST_TIMEOUT(argkinds_instruction_probe_at_each_site, 60)
{
	static const char *const funcs[] = { "reg_s", "reg_u", "reg_cs", "reg_hi", "rsp",  "rbp",
					     "rip",   "abs",   "imm",    "index",  "dirty", "many" };
	const char *target = prog("trace_progs/argkinds_target");
	char pats[12][128], *argv[13], err[256];
	struct djp_func_table *t;
	struct tproc *p;
	int st;

	CHECK(djp_funcs_read(target, &t, err, sizeof(err)) == 0);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "list", "--json", (char *)target, NULL }, false, -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < 12; i++) {
		char want[64];
		const char *rec, *addr;
		const struct djp_func *f;
		uint64_t a;
		snprintf(want, sizeof(want), "{\"name\":\"%s\",", funcs[i]);
		CHECK((rec = strstr(p->obuf, want)) != NULL);
		/* the site's, after the arguments' (an absolute one has one) */
		CHECK((addr = strstr(rec, "],\"address\":\"")) != NULL);
		a = strtoull(addr + 13, NULL, 0);
		CHECK((f = djp_funcs_at(t, a)) != NULL);
		snprintf(pats[i], sizeof(pats[i]), "func:%s+%#llx", f->name, (unsigned long long)(a - f->addr));
		argv[i] = pats[i];
	}
	argv[12] = NULL;
	free(p);
	djp_funcs_free(t);
	trace_c(&out, NULL, target, argv);
	CHECK_EQ(compare(&out, SDT_PROBES, "instruction probes", NULL, 0), SDT_VALUES);
}

/* ak_params(a..h): g and h come on the stack.  Its return probe has
 * every parameter as at the entry and the return value; a probe on a
 * line inside it, where g and h still are in their slots above the
 * return address, reads them %rsp-relative through a trampoline that
 * keeps the flags. */
TEST_TIMEOUT(argkinds_return_and_line_probes, 60)
{
	char line[256], pat[128];
	FILE *f = fopen(djp_test_path("../../selftests/trace_progs/argkinds_target.c"), "r");
	int at = 0, no = 0;

	CHECK(f != NULL);
	while (!no && fgets(line, sizeof(line), f))
		if (++at && strstr(line, "ak_opaque(); /* tag: params-call */"))
			no = at;
	fclose(f);
	CHECK(no > 0);
	trace_c(&out, NULL, prog("trace_progs/argkinds_target"), (char *const[]){ "func:ak_params%return", NULL });
	CHECK_EQ(compare(&out, "params", "return probe", NULL, 0), ROUNDS * 9);
	snprintf(pat, sizeof(pat), "line:argkinds_target.c:%d", no);
	trace_c(&out, NULL, prog("trace_progs/argkinds_target"), (char *const[]){ pat, NULL });
	CHECK(compare(&out, "params", "line probe", (const int[]){ 6, 7 }, 2) >= ROUNDS * 2);
}

/* A script that walks the stack at each probe: its trampolines keep
 * %rsp and %rbp in the view (a variant of their own), and the values are
 * read from the view, never prefetched. */
TEST_TIMEOUT(argkinds_script_with_stack_walk, 60)
{
	char script[4096] = "", cmd[4200], list[256], *name, *save = NULL;
	size_t len = 0;
	struct tproc *p;
	int st;

	snprintf(list, sizeof(list), "%s", SDT_PROBES);
	for (name = strtok_r(list, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
		bool six = !strcmp(name, "many");
		len += (size_t)snprintf(script + len, sizeof(script) - len,
					"probe process.provider(\"argkinds\").mark(\"%s\") { printf(\"hit %s %%d %%d %%d "
					"%%d%s\\n\", $arg1, $arg2, $arg3, $arg4%s); x = ubacktrace() }\n",
					name, name, six ? " %d %d" : "", six ? ", $arg5, $arg6" : "");
		CHECK(len < sizeof(script));
	}
	snprintf(cmd, sizeof(cmd), "%s %d", prog("trace_progs/argkinds_target"), ROUNDS);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, false, -1);
	st = tt_finish(p, 60000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		djp_test_fail(__FILE__, __LINE__, "djp -e: status %#x: %s", st, p->ebuf);
	parse(p->obuf, &out);
	free(p);
	CHECK_EQ(compare(&out, SDT_PROBES, "script with ubacktrace", NULL, 0), SDT_VALUES);
}

/* In-process handlers: a full trampoline (any C), a lean one without the
 * prefetch, int3; widened SDT nops and markers. */
static void engine(const char *target, const char *mode)
{
	char what[64];
	struct tproc *p = tt_spawn((char *const[]){ (char *)target, (char *)mode, "3", NULL }, false, -1);
	int st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	parse(p->obuf, &out);
	free(p);
	snprintf(what, sizeof(what), "%s handler", mode);
	CHECK_EQ(compare(&out, SDT_PROBES, what, NULL, 0), SDT_VALUES);
}

TEST_TIMEOUT(argkinds_in_process_handlers, 60)
{
	static const char *const modes[] = { "full", "lean", "int3" };
	for (int i = 0; i < 3; i++) {
		engine(prog("trace_progs/argkinds_engine"), modes[i]);
		engine(prog("trace_progs/argkinds_engine-mark"), modes[i]);
	}
}

/* The case as found: python3's gc__start, -4@112(%rsp), a nop widened
 * into a jump.  gc.collect(2) collects generation 2: each event says 2. */
TEST_TIMEOUT(argkinds_python_gc_start_generation, 60)
{
	char py[4096], spid[16];
	struct tproc *t, *p;
	int st;

	CHECK(realpath("/usr/bin/python3", py) != NULL); /* make check installs it */
	t = tt_spawn((char *const[]){ py, "-u", "-c",
				      "import gc, sys, os\n"
				      "gc.disable()\n"
				      "print('ready', os.getpid())\n"
				      "sys.stdin.readline()\n"
				      "for i in range(100): gc.collect(2)\n"
				      "print('collected')\n"
				      "sys.stdin.readline()\n",
				      NULL },
		     false, -1);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "python:gc__start", NULL }, false, -1);
	tt_wait_byte(t->pid, tt_site_addr(t->pid, "python:gc__start"), 0xe9, 20000);
	tt_send(t, "go\n");
	CHECK(tt_wait_out(t, "collected", 20000));
	for (int i = 0; i < 500 && tt_count(p->obuf, " python:gc__start ") < 100; i++)
		tt_wait_out(p, "\n\n", 20);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (tt_count(p->obuf, " python:gc__start arg1=2\n") != 100)
		djp_test_fail(__FILE__, __LINE__, "%d events, %d of them arg1=2: %.300s",
			      tt_count(p->obuf, " python:gc__start "),
			      tt_count(p->obuf, " python:gc__start arg1=2\n"), p->obuf);
	CHECK_EQ(tt_count(p->obuf, " python:gc__start "), 100);
	tt_end(t);
	free(p);
}
