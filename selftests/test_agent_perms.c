/*
 * Sessions follow ptrace's rule (lib/ptrace_perm.c), on both sides.
 *
 * A setuid-root copy of a program with the agent, run by an ordinary user,
 * and a program that made itself non-dumpable: the user who started them is
 * refused by the agent (it answers with an error and closes) and by the
 * tool (it will not talk to an agent it could not ptrace); root may trace
 * both.  Before the rule, the agent accepted any peer with the target's real
 * uid and the tool trusted any agent of root's.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "harness.h"
#include "kernel/agent/agent.h"
#include "test_trace_util.h"

#define NOBODY 65534

/* Connect to pid's agent as uid and read until end of file: 1 when the
 * agent closed on us (refused), 0 when it kept the connection (accepted),
 * -1 when no connection could be made. */
static int agent_closes_on(pid_t pid, int uid)
{
	int status;
	pid_t c = fork();

	CHECK(c >= 0);
	if (c == 0) {
		struct sockaddr_un a;
		socklen_t len;
		char buf[512];
		int fd;

		/* The name, found as root; then connect as uid. */
		if (djp_agent_addr_find(pid, &a, &len))
			_exit(3);
		if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid)))
			_exit(3);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, len))
			_exit(3);
		for (;;) {
			struct pollfd p = { fd, POLLIN, 0 };
			if (poll(&p, 1, 3000) <= 0)
				_exit(0); /* still open: accepted, waiting for us */
			if (read(fd, buf, sizeof(buf)) <= 0)
				_exit(1);
		}
	}
	CHECK_EQ(waitpid(c, &status, 0), c);
	CHECK(WIFEXITED(status));
	return WEXITSTATUS(status) == 3 ? -1 : WEXITSTATUS(status);
}

/* djp trace -x PID as uid for two seconds (its arming, on a loaded machine,
 * may take more than half of one): its exit status and output. */
static struct tproc *djp_attach(pid_t pid, int uid, int *status)
{
	char spid[16];
	struct tproc *p;

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "2", "-x", spid, "perm_*", NULL },
		     false, uid);
	*status = tt_finish(p, 20000);
	return p;
}

static void expect_refused_and_root_allowed(struct tproc *t)
{
	struct tproc *p;
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	CHECK_EQ(agent_closes_on(t->pid, NOBODY), 1);
	CHECK_EQ(agent_closes_on(t->pid, -1), 0);

	p = djp_attach(t->pid, NOBODY, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 0 || tt_count(p->obuf, "perm_tick") != 0 || tt_lines(p->ebuf) != 1)
		djp_test_fail(__FILE__, __LINE__, "djp as nobody: status %d, stderr: %s", st, p->ebuf);
	if (!strstr(p->ebuf, "not allowed to trace"))
		djp_test_fail(__FILE__, __LINE__, "djp as nobody said: %s", p->ebuf);
	free(p);

	p = djp_attach(t->pid, -1, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || tt_count(p->obuf, "perm_tick") == 0)
		djp_test_fail(__FILE__, __LINE__, "djp as root: status %d, stderr: %s", st, p->ebuf);
	free(p);
}

TEST_TIMEOUT(agent_refuses_user_of_setuid_program, 60)
{
	char dir[] = "/tmp/djp-perm-XXXXXX", path[64], cmd[PATH_MAX + 256];
	struct tproc *t;

	if (geteuid() != 0)
		SKIP("needs root to make a setuid program");
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0755) == 0);
	snprintf(path, sizeof(path), "%s/agent_perm_target", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chown 0:0 %s && chmod 4755 %s", djp_test_path("progs/agent_perm_target"),
		 path, path, path);
	CHECK(system(cmd) == 0);
	t = tt_spawn((char *const[]){ path, NULL }, false, NOBODY);
	expect_refused_and_root_allowed(t);
	tt_kill(t);
	free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST_TIMEOUT(agent_refuses_non_dumpable_process_to_its_user, 60)
{
	struct tproc *t;

	if (geteuid() != 0)
		SKIP("needs root to run a process as another user");
	t = tt_spawn((char *const[]){ (char *)djp_test_path("progs/agent_perm_target"), "nodump", NULL }, false, NOBODY);
	expect_refused_and_root_allowed(t);
	tt_kill(t);
	free(t);
}

TEST_TIMEOUT(agent_accepts_its_own_user, 60)
{
	struct tproc *t, *p;
	int st;

	if (geteuid() != 0)
		SKIP("needs root to run a process as another user");
	t = tt_spawn((char *const[]){ (char *)djp_test_path("progs/agent_perm_target"), NULL }, false, NOBODY);
	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	CHECK_EQ(agent_closes_on(t->pid, NOBODY), 0);
	p = djp_attach(t->pid, NOBODY, &st);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || tt_count(p->obuf, "perm_tick") == 0)
		djp_test_fail(__FILE__, __LINE__, "djp as the same user: status %d, stderr: %s", st, p->ebuf);
	free(p);
	tt_kill(t);
	free(t);
}

/* Another user binds the names the agent of a process about to start could
 * use, before it starts: the pid-only name of old, and pid-prefixed names
 * with tokens.  Its owner still reaches it, and the squatter's sockets are
 * never taken for its agent. */
TEST_TIMEOUT(agent_name_cannot_be_squatted, 60)
{
	int squat[2], st;
	pid_t target, squatter;
	struct tproc *p;
	char spid[16];
	char go;

	if (geteuid() != 0)
		SKIP("needs root to run a process as another user");
	target = fork();
	CHECK(target >= 0);
	if (target == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		raise(SIGSTOP);
		setenv("LD_PRELOAD", tt_lib(), 1);
		execl(tt_target(false), tt_target(false), "--tick-us", "1000", "--no-stdin", "--ticks", "20000", (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(target, &st, WUNTRACED) == target && WIFSTOPPED(st));
	CHECK(pipe(squat) == 0);
	squatter = fork();
	CHECK(squatter >= 0);
	if (squatter == 0) {
		static const char *const tails[] = { "", "-", "-0", "-00000000000000000000000000000000" };
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(3);
		for (unsigned i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
			struct sockaddr_un a = { .sun_family = AF_UNIX };
			int n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, DJP_AGENT_SOCK_PREFIX "%d%s", (int)target,
					 tails[i]);
			int fd = socket(AF_UNIX, SOCK_STREAM, 0);
			if (fd < 0 || bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
			    listen(fd, 8))
				_exit(4);
		}
		if (write(squat[1], "s", 1) != 1)
			_exit(5);
		pause();
		_exit(0);
	}
	close(squat[1]);
	CHECK_EQ(read(squat[0], &go, 1), 1);
	close(squat[0]);
	kill(target, SIGCONT);
	CHECK(tt_wait_agent(target, 10000));
	snprintf(spid, sizeof(spid), "%d", (int)target);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--duration", "0.5", "-x", spid, "tt_tick", NULL }, false,
		     -1);
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || tt_count(p->obuf, "tt_tick") == 0)
		djp_test_fail(__FILE__, __LINE__, "djp as the owner: status %d, stderr: %s", st, p->ebuf);
	free(p);
	kill(squatter, SIGKILL);
	kill(target, SIGKILL);
	waitpid(squatter, &st, 0);
	waitpid(target, &st, 0);
}
