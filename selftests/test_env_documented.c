/*
 * Knobs the documentation promises, each done once and looked at from
 * outside: DJP_SIGNAL and DJP_FREEZE_SIGNAL move the engine's real-time
 * signal (the remedy for a program that uses SIGRTMAX-3 itself: the
 * target's /proc/PID/status says which signal it catches),
 * DJP_AGENT_TIMEOUT bounds the launched command's wait for its tool (the
 * command starts that long after it dialled a tool that never answers),
 * DJP_PRELOAD names the agent djp -c loads (the target maps that file),
 * DJP_PROVIDER and DJP_NO_SDT_NOTE shape the marker's SDT note (readelf
 * says so, and djp list still finds the marker in .markers), and the Yama
 * note of a refused ptrace (a fake ptrace_scope, mounted in a private
 * mount namespace, read through the same code as the kernel's).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "test_trace_util.h"

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The signals pid catches (SigCgt: bit sig - 1). */
static unsigned long long caught(pid_t pid)
{
	char path[64], line[256];
	unsigned long long m = 0;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		sscanf(line, "SigCgt: %llx", &m);
	fclose(f);
	return m;
}

/* trace_target with the agent and `var`=sig: after djp trace -x armed and
 * traced it, it catches sig and not the default SIGRTMAX-3. */
static void engine_signal_moved(const char *var, int sig)
{
	char val[16], pid[16];
	struct tproc *t, *p;
	int st;

	snprintf(val, sizeof(val), "%d", sig);
	setenv(var, val, 1);
	t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "2000", NULL }, true, -1);
	unsetenv(var);
	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "tt_tick", NULL }, false, -1);
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	if (!(caught(t->pid) & (1ull << (sig - 1))) || (caught(t->pid) & (1ull << (SIGRTMAX - 3 - 1))))
		djp_test_fail(__FILE__, __LINE__, "%s=%d: the target catches %#llx", var, sig, caught(t->pid));
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_wait_restored(t->pid, tt_target(false), 5000));
	tt_kill(t);
	free(p);
	free(t);
}

TEST(env_djp_signal_moves_the_engine_signal)
{
	engine_signal_moved("DJP_SIGNAL", SIGRTMAX - 5);
}

TEST(env_djp_freeze_signal_is_its_older_name)
{
	engine_signal_moved("DJP_FREEZE_SIGNAL", SIGRTMAX - 6);
}

/* A "tool" that listens and never configures: the command's constructor
 * dials it and waits DJP_AGENT_TIMEOUT seconds, then main runs. */
static long long start_after(const char *timeout)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char name[64];
	struct tproc *t;
	long long t0, ms;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t n;

	CHECK(fd >= 0);
	n = (size_t)snprintf(name, sizeof(name), "djp-test-silent-tool-%d", (int)getpid());
	memcpy(a.sun_path + 1, name, n);
	CHECK(bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) == 0);
	CHECK(listen(fd, 4) == 0);
	setenv("DJP_AGENT_TOOL", name, 1);
	if (timeout)
		setenv("DJP_AGENT_TIMEOUT", timeout, 1);
	t0 = now_ms();
	t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, true, -1);
	unsetenv("DJP_AGENT_TOOL");
	unsetenv("DJP_AGENT_TIMEOUT");
	CHECK(tt_wait_out(t, "ready", 30000));
	ms = now_ms() - t0;
	tt_end(t);
	close(fd);
	return ms;
}

TEST(env_djp_agent_timeout_bounds_the_wait)
{
	long long one = start_after("1"), dflt = start_after(NULL);

	printf("# the command started %lld ms after it dialled with DJP_AGENT_TIMEOUT=1, %lld ms without\n", one,
	       dflt);
	/* never before the time is up; and well before the default 5 s */
	CHECK(one >= 1000);
	CHECK(one < 4000);
	CHECK(dflt >= 5000);
}

/* djp -c with DJP_PRELOAD naming a copy of the agent: the command maps
 * the copy. */
TEST(env_djp_preload_names_the_agent_loaded)
{
	char dir[] = "/tmp/djp-preload-XXXXXX", lib[4200], cmd[9000], maps[64], line[4400];
	struct tproc *p;
	bool found = false;
	int pid = 0, st;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(lib, sizeof(lib), "%s/libagent-copy.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", tt_lib(), lib);
	CHECK_EQ(system(cmd), 0);
	setenv("DJP_PRELOAD", lib, 1);
	snprintf(cmd, sizeof(cmd), "%s --tick-us 20000", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_tick", NULL }, false, -1);
	unsetenv("DJP_PRELOAD");
	CHECK(tt_wait_out(p, " tt_tick i=", 10000));
	CHECK(sscanf(p->obuf, "%*s %d", &pid) == 1); /* "SECONDS PID TID tt_tick ..." */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	CHECK((f = fopen(maps, "r")) != NULL);
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, lib) != NULL;
	fclose(f);
	kill(p->pid, SIGINT);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st));
	unlink(lib);
	rmdir(dir);
	if (!found)
		djp_test_fail(__FILE__, __LINE__, "process %d does not map %s", pid, lib);
}

/* A marker built with -D flags: its stapsdt note as readelf shows it, and
 * djp list. */
static void build_marked(const char *dir, const char *defs, char *prog, size_t progsz)
{
	char src[4200], cmd[12000];
	FILE *f;
	snprintf(src, sizeof(src), "%s/m.c", dir);
	CHECK((f = fopen(src, "w")) != NULL);
	CHECK(fputs("#include <djprobe/marker.h>\n"
		    "int main(int argc, char **argv) { (void)argv; MARK(env_mark, \"n=%d\", argc); return 0; }\n",
		    f) >= 0);
	CHECK(fclose(f) == 0);
	snprintf(prog, progsz, "%s/m%s", dir, defs[0] ? "-defs" : "");
	snprintf(cmd, sizeof(cmd), "gcc -O2 %s -I'%s' -o '%s' '%s'", defs, djp_test_path("../../include"), prog, src);
	if (system(cmd))
		djp_test_fail(__FILE__, __LINE__, "gcc failed: %s", cmd);
}

static char *output_of(const char *cmd)
{
	static char out[1 << 16];
	size_t n;
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	CHECK(pclose(p) == 0);
	return out;
}

TEST(marker_provider_and_no_sdt_note)
{
	char dir[] = "/tmp/djp-provider-XXXXXX", prog[4300], cmd[9000];
	char *out;

	CHECK(mkdtemp(dir) != NULL);
	build_marked(dir, "-DDJP_PROVIDER=myapp", prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd), "readelf -nW '%s'", prog);
	out = output_of(cmd);
	CHECK(strstr(out, "Provider: myapp") != NULL);
	CHECK(strstr(out, "Name: env_mark") != NULL);
	CHECK(strstr(out, "Provider: djp") == NULL);
	snprintf(cmd, sizeof(cmd), "'%s' list '%s'", tt_djp(), prog);
	CHECK(strstr(output_of(cmd), "env_mark") != NULL);

	build_marked(dir, "-DDJP_NO_SDT_NOTE", prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd), "readelf -nW '%s'", prog);
	out = output_of(cmd);
	CHECK(strstr(out, "stapsdt") == NULL);
	CHECK(strstr(out, "env_mark") == NULL);
	snprintf(cmd, sizeof(cmd), "objcopy -O binary --only-section=.markers '%s' /dev/stdout | tr -c 'a-z_' ' '",
		 prog);
	CHECK(strstr(output_of(cmd), "env_mark") != NULL);
	snprintf(cmd, sizeof(cmd), "'%s' list '%s'", tt_djp(), prog);
	CHECK(strstr(output_of(cmd), "env_mark") != NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
}
