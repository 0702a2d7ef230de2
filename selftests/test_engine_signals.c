/*
 * The library and the application's signals: a SIGTRAP that is not ours
 * does what it would do without the library.  Before the library called
 * libc's sigaction directly, "chaining" a foreign trap to the default action
 * went through the library's own signal() interposer, which kept our
 * handler installed: raise(SIGTRAP) re-entered it until the stack overflowed
 * and the process died of SIGSEGV.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"

static volatile sig_atomic_t app_traps;

__attribute__((noinline)) static void sig_site(int i)
{
	MARK(eng_signals_site, "i=%d", i);
	__asm__ volatile("" ::: "memory");
}

static void nothing(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
}

static void app_handler(int sig)
{
	(void)sig;
	app_traps++;
}

static void app_action(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)info;
	(void)uc;
	app_traps++;
}

/* Fork; the child connects a probe, installs `how` (0: none, 1: signal(),
 * 2: sigaction()), raises SIGTRAP twice and exits with the count its
 * handler saw.  Returns the child's wait status. */
static int child_raises(int how, unsigned flags)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		int id = djp_connect("eng_signals_*", nothing, NULL, flags);
		if (id < 0)
			_exit(100);
		sig_site(1);
		if (how == 1 && signal(SIGTRAP, app_handler) == SIG_ERR)
			_exit(101);
		if (how == 2) {
			struct sigaction sa = { .sa_sigaction = app_action, .sa_flags = SA_SIGINFO };
			sigemptyset(&sa.sa_mask);
			if (sigaction(SIGTRAP, &sa, NULL))
				_exit(102);
		}
		raise(SIGTRAP);
		raise(SIGTRAP);
		sig_site(2);
		djp_disconnect(id);
		_exit(app_traps);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

TEST(foreign_sigtrap_default_action_kills_with_sigtrap)
{
	unsigned flags[] = { DJP_GPR_ONLY, DJP_FORCE_INT3 };
	for (unsigned i = 0; i < 2; i++) {
		int status = child_raises(0, flags[i]);
		if (!WIFSIGNALED(status))
			djp_test_fail(__FILE__, __LINE__, "child exited %d, not killed", WEXITSTATUS(status));
		CHECK_EQ(WTERMSIG(status), SIGTRAP);
	}
}

TEST(foreign_sigtrap_reaches_the_application_handler)
{
	unsigned flags[] = { DJP_GPR_ONLY, DJP_FORCE_INT3 };
	for (unsigned i = 0; i < 2; i++) {
		for (int how = 1; how <= 2; how++) {
			int status = child_raises(how, flags[i]);
			if (WIFSIGNALED(status))
				djp_test_fail(__FILE__, __LINE__, "how %d: killed by signal %d", how, WTERMSIG(status));
			CHECK_EQ(WEXITSTATUS(status), 2);
		}
	}
}

/* A signal handler that interrupted djp_connect or djp_disconnect and calls
 * them itself gets -EDEADLK, never a deadlock on the engine lock its own
 * thread holds (documented in <djprobe/djprobe.h>). */
static volatile sig_atomic_t in_engine, refused, served, other;
static pthread_t engine_thread;
static atomic_bool pester_stop;

static void reentering_handler(int sig)
{
	int saved = errno, id;
	(void)sig;
	if (!in_engine)
		return;
	id = djp_connect("eng_signals_*", nothing, NULL, DJP_GPR_ONLY);
	if (id == -EDEADLK) {
		refused++;
	} else if (id >= 0) {
		served++;
		if (djp_disconnect(id))
			other++;
	} else {
		other++;
	}
	errno = saved;
}

static void *pester(void *arg)
{
	(void)arg;
	while (!atomic_load(&pester_stop)) {
		pthread_kill(engine_thread, SIGUSR1);
		usleep(200);
	}
	return NULL;
}

TEST_TIMEOUT(connect_from_signal_handler_inside_engine_is_edeadlk, 120)
{
	struct sigaction sa = { .sa_handler = reentering_handler };
	pthread_t t;
	int i;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	engine_thread = pthread_self();
	CHECK(pthread_create(&t, NULL, pester, NULL) == 0);
	/* Until a handler has certainly landed inside the engine a good
	 * number of times; a deadlock shows as the test's timeout. */
	for (i = 0; i < 20000 && refused < 20; i++) {
		int id;
		in_engine = 1;
		id = djp_connect("eng_signals_*", nothing, NULL, DJP_GPR_ONLY);
		in_engine = 0;
		CHECK(id >= 0);
		sig_site(i);
		in_engine = 1;
		CHECK_EQ(djp_disconnect(id), 0);
		in_engine = 0;
	}
	atomic_store(&pester_stop, true);
	pthread_join(t, NULL);
	fprintf(stderr, "# %d rounds: %d refused, %d served in a handler\n", i, (int)refused, (int)served);
	CHECK(refused >= 20);
	CHECK_EQ(other, 0);
}
