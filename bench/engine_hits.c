/*
 * What an armed marker costs, next to what it is measured against, in one
 * process, each loop interleaved run by run and the median of 7 taken.
 *
 *  - lean: a marker armed with an empty DJP_GPR_ONLY handler, against a
 *    hand-written reference patch of the same site (jmp out, save the 9
 *    caller-saved registers, call an empty function, restore, jmp back);
 *    the ratio of their costs over the plain NOP (target 1.3);
 *  - full: the same with a handler that may use vector registers (the
 *    trampoline that saves them), ns over the NOP (target 12); this
 *    program's code uses legacy SSE only and no x87 (it links the shared
 *    library, as programs do), so xmm0-15 and MXCSR are what is saved
 *    (arch/x86/vector_use.c), and a marker in an object with AVX-512 code
 *    (bench-targets/libbench_avx512.so) shows the widest save next to it;
 *  - int3: a marker armed as an int3 probe against a bare int3 with an
 *    empty SIGTRAP handler (target 1.1);
 *  - after: the marker after its last disarm against itself before it was
 *    ever armed (target 1.0, within noise);
 *  - arming and disarming 10,000 sites while two threads run them (ms,
 *    target 10 each way), first with new trampolines, then reusing them.
 */
#include <cpuid.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "bench/bench.h"

#define RUNS 7

ALIGNED void hit_marker(int a, long b)
{
	MARK(bench_hit, "a=%d b=%ld", a, b);
}


ALIGNED void empty_function(void)
{
	__asm__ __volatile__("");
}

/* The reference patch: what a hand-written jump patch costs at least. */
ALIGNED void hit_reference(int a, long b)
{
	(void)a;
	(void)b;
	__asm__ __volatile__("jmp 1f\n"
			     "2:\n"
			     ".pushsection .text.bench_ref,\"ax\",@progbits\n"
			     "1: push %%rax\npush %%rcx\npush %%rdx\npush %%rsi\npush %%rdi\n"
			     "push %%r8\npush %%r9\npush %%r10\npush %%r11\n"
			     "call empty_function\n"
			     "pop %%r11\npop %%r10\npop %%r9\npop %%r8\n"
			     "pop %%rdi\npop %%rsi\npop %%rdx\npop %%rcx\npop %%rax\n"
			     "jmp 2b\n"
			     ".popsection\n" ::
				     : "memory");
}

/* A function nobody prepared, probed at its entry (djp_connect_at): its
 * first instruction stores rip-relative, so the copy run out of line is
 * a relocated one. */
volatile long bench_sink;
ALIGNED void hit_function(int a, long b)
{
	bench_sink = b;
	(void)a;
}

ALIGNED void hit_bare_int3(int a, long b)
{
	(void)a;
	(void)b;
	__asm__ __volatile__("int3\n.byte 0x0f,0x1f,0x44,0x00,0x00");
}





/* Median ns per call of each fn, the loops interleaved run by run. */
static void measure(fn_t *fns, int nfns, long n, double *med)
{
	double t[8][RUNS];
	for (int r = 0; r < RUNS; r++)
		for (int f = 0; f < nfns; f++) {
			double t0 = now_ns();
			loop(fns[f], n);
			t[f][r] = (now_ns() - t0) / n;
		}
	for (int f = 0; f < nfns; f++) {
		med[f] = median_of(t[f], RUNS);
	}
}

/* avx512_site from bench-targets/libbench_avx512.so, next to this program's
 * folder, or NULL (no AVX-512, not built). */
static fn_t avx512_site(void)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
	unsigned a, b, c, d;
	void *h;
	if (n <= 0 || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX512F))
		return NULL;
	path[n] = 0;
	*strrchr(path, '/') = 0;
	strcat(path, "/../bench-targets/libbench_avx512.so");
	h = dlopen(path, RTLD_NOW);
	return h ? (fn_t)dlsym(h, "avx512_site") : NULL;
}

static void empty_handler(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
}

static void empty_trap(int sig)
{
	(void)sig;
}

/* The kernel's view of a sigaction, to swap SIGTRAP handlers behind the
 * engine's back (its handler and ours alternate run by run). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static void swap_trap(const struct ksigaction *in, struct ksigaction *out)
{
	syscall(SYS_rt_sigaction, SIGTRAP, in, out, 8);
}

static void row(const char *name, double value, const char *unit, double target, int lower_is_ok)
{
	int ok = lower_is_ok ? value <= target : value >= target;
	printf("%s | %.3f %s | %s %.3g | %s\n", name, value, unit, lower_is_ok ? "<=" : ">=", target,
	       ok ? "ok" : "over");
}

/* ---- 10,000 sites ---- */
#define MANY10(x) x x x x x x x x x x
ALIGNED void many_sites(int a)
{
	MANY10(MANY10(MANY10(MANY10(MARK(bench_many, "a=%d", a);))))
}

static atomic_int stop_many;
static void *run_many(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop_many, memory_order_relaxed))
		many_sites(1);
	return NULL;
}

static double time_ms(int (*op)(int), int arg, int *ret)
{
	double t0 = now_ns();
	*ret = op(arg);
	return (now_ns() - t0) / 1e6;
}

static int connect_many(int unused)
{
	(void)unused;
	return djp_connect("bench_many", empty_handler, NULL, DJP_GPR_ONLY);
}

/* One process's lean figures: armed, reference and NOP, ns per call. */
/* The engine's SIGTRAP handler at `probed` (armed as an int3 probe) and a
 * bare one at a bare int3, alternating: t[0] the bare round trip, t[1] the
 * probe's, medians of RUNS. */
static void int3_against_bare(fn_t probed, long n, double t[2])
{
	struct ksigaction engine, bare;
	double tb[RUNS], tp[RUNS];
	swap_trap(NULL, &engine);
	bare = engine;
	bare.handler = (void *)empty_trap;
	bare.flags &= ~(unsigned long)(SA_SIGINFO | SA_ONSTACK | SA_NODEFER);
	for (int r = 0; r < RUNS; r++) {
		swap_trap(&bare, NULL);
		measure((fn_t[]){ hit_bare_int3 }, 1, n, &tb[r]);
		swap_trap(&engine, NULL);
		measure((fn_t[]){ probed }, 1, n, &tp[r]);
	}
	swap_trap(&engine, NULL);
	t[0] = median_of(tb, RUNS);
	t[1] = median_of(tp, RUNS);
}

static int lean_once(void)
{
	double m[3];
	int id = djp_connect("bench_hit", empty_handler, NULL, DJP_GPR_ONLY);
	if (id < 0)
		return fprintf(stderr, "connect: %d\n", id), 1;
	measure((fn_t[]){ hit_marker, hit_reference, hit_nop }, 3, 2000000, m);
	djp_disconnect(id);
	printf("%.4f %.4f %.4f\n", m[0], m[1], m[2]);
	return 0;
}

/*
 * The lean figures as the median over LEAN_PROCS processes of this
 * program: each is loaded at other addresses, and what a jump costs moves
 * with them by a few tenths of a nanosecond, the reference patch's as much
 * as the marker's (the peers' figures are medians over processes too).
 */
#define LEAN_PROCS 5
static int lean(void)
{
	double a[LEAN_PROCS], ref[LEAN_PROCS], ratio[LEAN_PROCS];
	char cmd[4200], self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = 0;
	snprintf(cmd, sizeof(cmd), "'%s' --lean-once", self);
	for (int p = 0; p < LEAN_PROCS; p++) {
		double m[3];
		FILE *f = popen(cmd, "r");
		if (!f || fscanf(f, "%lf %lf %lf", &m[0], &m[1], &m[2]) != 3 || pclose(f))
			return fprintf(stderr, "engine_hits: the lean run failed\n"), 1;
		a[p] = m[0] - m[2];
		ref[p] = m[1] - m[2];
		ratio[p] = a[p] / ref[p];
	}
	printf("lean: marker armed, empty handler, ns over NOP | %.3f ns | - | -\n", median_of(a, LEAN_PROCS));
	printf("lean: hand-written reference patch, ns over NOP | %.3f ns | - | -\n", median_of(ref, LEAN_PROCS));
	row("lean: armed marker / reference patch (cost over NOP)", median_of(ratio, LEAN_PROCS), "x", 1.3, 1);
	return 0;
}

/*
 * A function entry armed as a jump over its first instruction (the
 * trampoline runs it relocated), against a marker, the same lean handler:
 * what arming adds to each call.  One process measures both, unarmed and
 * armed, in alternating rounds; the figure is the median over LEAN_PROCS
 * processes, as the lean one (a jump's cost moves with the addresses a
 * process is loaded at).
 */
static int jump_once(void)
{
	double cm[RUNS], cf[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double u[3], a[3];
		int im, ifn, jumps;
		measure((fn_t[]){ hit_marker, hit_function, hit_nop }, 3, 500000, u);
		im = djp_connect("bench_hit", empty_handler, NULL, DJP_GPR_ONLY);
		ifn = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), .func = "hit_function" },
				     empty_handler, NULL, DJP_GPR_ONLY);
		jumps = im >= 0 && ifn >= 0 && *(volatile uint8_t *)hit_function == 0xe9;
		if (jumps)
			measure((fn_t[]){ hit_marker, hit_function, hit_nop }, 3, 500000, a);
		djp_disconnect(im);
		djp_disconnect(ifn);
		if (!jumps)
			return fprintf(stderr, "engine_hits: hit_function not armed as a jump (%d %d)\n", im, ifn), 1;
		cm[r] = a[0] - u[0];
		cf[r] = a[1] - u[1];
	}
	printf("%.4f %.4f\n", median_of(cm, RUNS), median_of(cf, RUNS));
	return 0;
}

static int jump_entry(void)
{
	double cm[LEAN_PROCS], cf[LEAN_PROCS], ratio[LEAN_PROCS];
	char cmd[4200], self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 1;
	self[len] = 0;
	snprintf(cmd, sizeof(cmd), "'%s' --jump-once", self);
	for (int p = 0; p < LEAN_PROCS; p++) {
		FILE *f = popen(cmd, "r");
		if (!f || fscanf(f, "%lf %lf", &cm[p], &cf[p]) != 2 || pclose(f))
			return fprintf(stderr, "engine_hits: the jump run failed\n"), 1;
		ratio[p] = cf[p] / cm[p];
	}
	printf("jump: marker armed, lean handler, ns over unarmed | %.3f ns | - | -\n", median_of(cm, LEAN_PROCS));
	printf("jump: function entry armed, lean handler, ns over unarmed | %.3f ns | - | -\n", median_of(cf, LEAN_PROCS));
	row("jump: function entry probe / marker, same handler (cost over unarmed)", median_of(ratio, LEAN_PROCS), "x", 1.3,
	    1);
	return 0;
}

int main(int argc, char **argv)
{
	const long n = 2000000, n3 = 20000;
	double before[2], m[3], t3[2], after[2];
	int id, r;


	if (argc > 1 && !strcmp(argv[1], "--lean-once"))
		return lean_once();
	if (argc > 1 && !strcmp(argv[1], "--jump-once"))
		return jump_once();

	/* The marker before it was ever armed (after a warm-up run). */
	measure((fn_t[]){ hit_marker, hit_nop }, 2, n, before);
	measure((fn_t[]){ hit_marker, hit_nop }, 2, n, before);

	/* lean: in processes of their own, median of the ratios */
	if (lean())
		return 1;

	/* full: here (code of legacy SSE only: xmm0-15 saved), and in an
	 * object with AVX-512 code (zmm0-31 and k0-7 saved), side by side */
	{
		fn_t wide = avx512_site();
		int id2 = wide ? djp_connect("bench_hit_avx512", empty_handler, NULL, 0) : -1;
		id = djp_connect("bench_hit", empty_handler, NULL, 0);
		if (id2 >= 0) {
			measure((fn_t[]){ hit_marker, wide, hit_nop }, 3, n, m);
			djp_disconnect(id2);
		} else {
			measure((fn_t[]){ hit_marker, hit_nop, hit_nop }, 3, n, m);
		}
		djp_disconnect(id);
		row("full: marker armed, vector-saving trampoline, ns over NOP", m[0] - m[2], "ns", 12, 1);
		if (id2 >= 0)
			printf("full: the same in an object with AVX-512 code (zmm0-31, k0-7 saved), ns over NOP | "
			       "%.3f ns | - | -\n",
			       m[1] - m[2]);
		else
			printf("full: the same in an object with AVX-512 code | not run: no AVX-512 or no %s | - | -\n",
			       "libbench_avx512.so");
	}

	/* int3: the engine's SIGTRAP handler and a bare one alternate. */
	id = djp_connect("bench_hit", empty_handler, NULL, DJP_FORCE_INT3);
	int3_against_bare(hit_marker, n3, t3);
	djp_disconnect(id);
	printf("int3: bare int3 + SIGTRAP round trip | %.1f ns | - | -\n", t3[0]);
	printf("int3: marker armed as int3 probe | %.1f ns | - | -\n", t3[1]);
	row("int3: int3 probe / bare int3 round trip", t3[1] / t3[0], "x", 1.1, 1);



	if (jump_entry())
		return 1;

	/* after */
	measure((fn_t[]){ hit_marker, hit_nop }, 2, n, after);
	/* Each against the NOP measured with it, so that drift cancels. */
	row("after disarm: marker / same marker before ever armed", (after[0] / after[1]) / (before[0] / before[1]), "x",
	    1.03, 1);

	/* 10,000 sites, two threads running them */
	{
		/* the first arming makes the trampolines; then RUNS rounds,
		 * median of each (one round on a shared 2-core machine varied
		 * from 9 to 24 ms with the other threads' scheduling) */
		pthread_t th[2];
		double arm1, disarm1, arm2[RUNS], disarm2[RUNS];
		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, run_many, NULL);
		arm1 = time_ms(connect_many, 0, &id);
		if (id < 0)
			return fprintf(stderr, "connect many: %d\n", id), 1;
		disarm1 = time_ms(djp_disconnect, id, &r);
		for (int k = 0; k < RUNS; k++) {
			arm2[k] = time_ms(connect_many, 0, &id);
			if (id < 0)
				return fprintf(stderr, "connect many: %d\n", id), 1;
			disarm2[k] = time_ms(djp_disconnect, id, &r);
		}
		atomic_store(&stop_many, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		printf("10,000 sites: first arm, making trampolines | %.2f ms | - | -\n", arm1);
		printf("10,000 sites: first disarm | %.2f ms | - | -\n", disarm1);
		row("10,000 sites: arm, 2 threads running them (median of 7)", median_of(arm2, RUNS), "ms", 10, 1);
		row("10,000 sites: disarm, 2 threads running them (median of 7)", median_of(disarm2, RUNS), "ms", 10, 1);
	}

	/* Last: what it leaves in the process (a point's site, its copy) is
	 * kept out of the figures above. */
	/* An instruction probe: the same round trip, plus the displaced
	 * instruction run out of line, against the bare one. */
	id = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), .func = "hit_function" },
			    empty_handler, NULL, DJP_FORCE_INT3);
	if (id >= 0) {
		double ti[2];
		int3_against_bare(hit_function, n3, ti);
		djp_disconnect(id);
		printf("int3: function entry probed, its instruction run out of line | %.1f ns | - | -\n", ti[1]);
		row("int3: instruction probe (out of line) / bare int3 round trip", ti[1] / ti[0], "x", 1.1, 1);
	} else {
		printf("int3: instruction probe | not run: connect_at %d | - | -\n", id);
	}
	return 0;
}
