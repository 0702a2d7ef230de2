/*
 * The functions below the engine's entry points need the engine lock
 * (kernel/lock.c): each says so with DJP_LOCK_HELD, which reports the
 * function and aborts before it touches anything when the calling thread
 * does not hold the lock.  Each is called here without it, in a child of
 * its own: the child dies of SIGABRT with the one line that names it.
 * With the lock, the same calls return.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "kernel/arming.h"
#include "kernel/lock.h"
#include "kernel/probes.h"

static struct djp_object empty_object;

static void call_sites_apply(void)
{
	djp_sites_apply(NULL, 0, NULL);
}

static void call_sites_forget(void)
{
	djp_sites_forget(&empty_object);
}

static void call_yield(void)
{
	djp_sites_yield_to_foreign_traps();
}

static void call_retake(void)
{
	djp_sites_retake();
}

static void call_change_probe(void)
{
	struct site_vec sv = { 0 };
	djp_change_probe(&sv, NULL, -1);
}

static void call_attach_all(void)
{
	djp_probes_attach_all();
}

static void call_detach(void)
{
	djp_probe_detach(12345);
}

static void call_objects_detach(void)
{
	djp_objects_detach(NULL, 0);
}

static void call_refresh(void)
{
	djp_objects_refresh();
}

static void call_init(void)
{
	djp_engine_init_locked();
}

static void call_ret_probes_changed(void)
{
	djp_ret_probes_changed(0);
}

static const struct {
	const char *name;
	void (*call)(void);
} calls[] = {
	{ "djp_sites_apply", call_sites_apply },
	{ "djp_sites_forget", call_sites_forget },
	{ "djp_sites_yield_to_foreign_traps", call_yield },
	{ "djp_sites_retake", call_retake },
	{ "djp_change_probe", call_change_probe },
	{ "djp_probes_attach_all", call_attach_all },
	{ "djp_probe_detach", call_detach },
	{ "djp_objects_detach", call_objects_detach },
	{ "djp_objects_refresh", call_refresh },
	{ "djp_engine_init_locked", call_init },
	{ "djp_ret_probes_changed", call_ret_probes_changed },
};

/* Run call in a child, its stderr into out; its wait status. */
static int run_child(void (*call)(void), bool locked, char *out, size_t outsz)
{
	int fd[2], st;
	size_t n = 0;
	ssize_t r;
	pid_t pid;
	CHECK(pipe(fd) == 0);
	CHECK((pid = fork()) >= 0);
	if (!pid) {
		dup2(fd[1], 2);
		close(fd[0]);
		if (locked)
			djp_engine_lock_take();
		call();
		if (locked)
			djp_engine_lock_release();
		_exit(0);
	}
	close(fd[1]);
	while (n + 1 < outsz && (r = read(fd[0], out + n, outsz - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fd[0]);
	CHECK(waitpid(pid, &st, 0) == pid);
	return st;
}

TEST(engine_lock_held_is_asserted)
{
	char out[4096], want[256];
	unsigned fired = 0;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		int st = run_child(calls[i].call, false, out, sizeof(out));
		snprintf(want, sizeof(want), "djprobe: %s called without the engine lock\n", calls[i].name);
		printf("# %s without the lock: %s, \"%.*s\"\n", calls[i].name,
		       WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "returned", (int)strcspn(out, "\n"), out);
		fired += WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && !strcmp(out, want);
	}
	CHECK_EQ(fired, sizeof(calls) / sizeof(calls[0]));
	/* with the lock they return, and say nothing */
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		int st = run_child(calls[i].call, true, out, sizeof(out));
		if (!WIFEXITED(st) || WEXITSTATUS(st) || out[0])
			printf("# %s with the lock: status %#x, \"%s\"\n", calls[i].name, st, out);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_STR(out, "");
	}
}
