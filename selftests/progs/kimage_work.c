// SPDX-License-Identifier: GPL-2.0
/*
 * The workload that drives the kernel image's markers in the kcheck guest
 * (selftests/kcheck/kimage_cmp.sh): forks, execs and exits, page faults,
 * allocations, a contended pipe mutex, block I/O on null_blk, UDP and TCP
 * over loopback, and lines on the serial console, each a fixed number of
 * times.
 *
 * Its name is its point: every task it makes is called "kimage_work" (the
 * exec is of this same file, so the name stays), and the comparison module
 * counts the task-context markers and tracepoints only for tasks of that
 * name.  All of them exist only between the shell starting this program
 * and its wait() returning, so an event of theirs falls inside the window
 * in which both probes are connected.  It waits for every child and joins
 * every thread before it exits.
 *
 * Usage: kimage_work [N]        (N rounds, 20 by default)
 *        kimage_work exec-child (what the exec runs: exits at once)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define WRITERS 4
#define PIPE_BYTES 2000

static const char *self;

static void die(const char *what)
{
	fprintf(stderr, "kimage_work: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void forks_and_execs(int n)
{
	int i, st;

	for (i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0)
			die("fork");
		if (p == 0) {
			if (i % 2)
				_exit(0);
			execl(self, self, "exec-child", (char *)NULL);
			_exit(127);
		}
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			die("child");
	}
}

static void faults(int n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i;

	if (m == MAP_FAILED)
		die("mmap");
	for (i = 0; i < n; i++)
		m[i * page] = 1;
	munmap(m, n * page);
}

/* Four writers of one pipe take its mutex against each other. */
static int pipe_fd[2];

static void *writer(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < PIPE_BYTES; i++)
		if (write(pipe_fd[1], "x", 1) != 1)
			die("pipe write");
	return NULL;
}

static void contention(void)
{
	pthread_t t[WRITERS];
	char buf[512];
	long left = (long)WRITERS * PIPE_BYTES;
	int i;

	if (pipe(pipe_fd))
		die("pipe");
	for (i = 0; i < WRITERS; i++)
		if (pthread_create(&t[i], NULL, writer, NULL))
			die("pthread_create");
	while (left > 0) {
		ssize_t r = read(pipe_fd[0], buf, sizeof(buf));

		if (r <= 0)
			die("pipe read");
		left -= r;
	}
	for (i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	close(pipe_fd[0]);
	close(pipe_fd[1]);
}

static void block_io(int n)
{
	void *buf;
	int fd, i;

	fd = open("/dev/nullb0", O_RDONLY | O_DIRECT);
	if (fd < 0)
		die("/dev/nullb0");
	if (posix_memalign(&buf, 4096, 4096))
		die("posix_memalign");
	for (i = 0; i < n; i++)
		if (pread(fd, buf, 4096, (off_t)i * 4096) != 4096)
			die("pread /dev/nullb0");
	free(buf);
	close(fd);
}

static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0)
		die("socket");
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr))
		die("SIOCGIFFLAGS lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr))
		die("SIOCSIFFLAGS lo");
	close(s);
}

static void udp(int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	char c;
	int s, i;

	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || getsockname(s, (struct sockaddr *)&a, &len))
		die("udp socket");
	for (i = 0; i < n; i++) {
		if (sendto(s, "u", 1, 0, (struct sockaddr *)&a, sizeof(a)) != 1)
			die("sendto");
		if (recv(s, &c, 1, 0) != 1)
			die("recv");
	}
	close(s);
}

/* A TCP exchange leaves timer_list timers behind it (delayed acks,
 * TIME_WAIT), which expire while the rest of the workload runs. */
static void tcp(int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	char c;
	int l, s, t, i;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		die("tcp listen");
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("tcp connect");
	t = accept(l, NULL, NULL);
	if (t < 0)
		die("accept");
	for (i = 0; i < n; i++) {
		if (write(s, "t", 1) != 1 || read(t, &c, 1) != 1 || write(t, "t", 1) != 1 || read(s, &c, 1) != 1)
			die("tcp exchange");
	}
	close(s);
	close(t);
	close(l);
}

/* Lines written to the serial console, each drained before the next: the
 * UART raises an interrupt as its transmitter empties, which is the
 * guest's one device interrupt handled through irq_desc (the timers' are
 * the local APIC's own vectors). */
static void console_lines(int n, int rounds)
{
	int fd = open("/dev/console", O_WRONLY | O_NOCTTY);
	int i;

	if (fd < 0)
		die("/dev/console");
	for (i = 0; i < n; i++) {
		dprintf(fd, "kimage_work: # line %d of %d after %d rounds\n", i + 1, n, rounds);
		if (tcdrain(fd))
			die("tcdrain /dev/console");
	}
	close(fd);
}

int main(int argc, char **argv)
{
	static char path[4096];
	ssize_t k;
	int n = 20, r;

	if (argc > 1 && !strcmp(argv[1], "exec-child"))
		return 0;
	if (argc > 1)
		n = atoi(argv[1]);
	if (n <= 0) {
		fprintf(stderr, "kimage_work: bad round count '%s'\n", argv[1]);
		return 2;
	}
	/* The exec names this file, not /proc/self/exe, whose name the kernel
	 * would give the task. */
	k = readlink("/proc/self/exe", path, sizeof(path) - 1);
	if (k <= 0)
		die("readlink /proc/self/exe");
	path[k] = 0;
	self = path;
	loopback_up();
	for (r = 0; r < n; r++) {
		forks_and_execs(4);
		faults(16);
		contention();
		block_io(8);
		udp(8);
		tcp(8);
	}
	console_lines(4, n);
	return 0;
}
