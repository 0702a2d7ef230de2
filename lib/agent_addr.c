/*
 * Naming the agent's socket so that nobody can take the name first.
 *
 * The agent listens in the abstract namespace, which has no permissions:
 * any user may bind any free name.  A name made of the pid alone could be
 * bound by another user before the process started, and its owner could no
 * longer reach it.  So the name carries 128 random bits after the pid
 * ("djprobe-agent-PID-TOKEN"); a taken name (EADDRINUSE) just means another
 * draw.
 *
 * The tool cannot guess the token either; it finds the socket the way the
 * kernel lets only a ptrace-capable peer find it: the target's open
 * descriptors (/proc/PID/fd, which the kernel guards with ptrace's access
 * check) name their socket inodes, and /proc/net/unix maps inodes to names.
 * The listening socket with the pid's prefix whose inode the target itself
 * holds is its agent's; any other socket with that prefix is someone
 * else's, and ignored.  The tool then checks with SO_PEERCRED that the
 * process it reached is the target (kernel/agent/agent.c and lib/ptrace_perm.c
 * decide whether the two may talk).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "lib/agent_addr.h"

#define UNIX_ACCEPTCON 0x10000 /* __SO_ACCEPTCON in /proc/net/unix's Flags */

socklen_t djp_abstract_addr(struct sockaddr_un *a, const char *name)
{
	size_t n = strlen(name);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int djp_agent_addr_make(struct sockaddr_un *a, socklen_t *len)
{
	unsigned char r[16];
	char name[80];
	int n;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	n = snprintf(name, sizeof(name), DJP_AGENT_SOCK_PREFIX "%d-", (int)getpid());
	for (size_t i = 0; i < sizeof(r); i++)
		n += snprintf(name + n, sizeof(name) - (size_t)n, "%02x", r[i]);
	*len = djp_abstract_addr(a, name);
	return 0;
}

/* The socket inodes among pid's descriptors, or NULL with *err set. */
static unsigned long *socket_inodes(pid_t pid, size_t *count, int *err)
{
	char path[64], link[64];
	unsigned long *v = NULL, ino;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path))) {
		*err = errno == ENOENT ? -ESRCH : -EACCES;
		return NULL;
	}
	while ((de = readdir(d))) {
		char fdpath[sizeof(path) + sizeof(de->d_name) + 1];
		ssize_t k;
		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		if ((k = readlink(fdpath, link, sizeof(link) - 1)) < 0)
			continue;
		link[k] = 0;
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		if (n == cap) {
			unsigned long *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				*err = -ENOMEM;
				return NULL;
			}
			v = nv;
		}
		v[n++] = ino;
	}
	closedir(d);
	*count = n;
	*err = 0;
	return v ? v : calloc(1, sizeof(*v));
}

int djp_agent_addr_find(pid_t pid, struct sockaddr_un *a, socklen_t *len)
{
	char prefix[48], line[512];
	size_t nino = 0, plen;
	int err, found = -ENOENT;
	unsigned long *ino = socket_inodes(pid, &nino, &err);
	FILE *f;

	if (!ino)
		return err;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "@" DJP_AGENT_SOCK_PREFIX "%d-", (int)pid);
	if (!(f = fopen("/proc/net/unix", "re"))) {
		free(ino);
		return -errno;
	}
	while (found == -ENOENT && fgets(line, sizeof(line), f)) {
		unsigned long flags, inode;
		char name[256];
		if (sscanf(line, "%*s %*x %*x %lx %*x %*x %lu %255s", &flags, &inode, name) != 3 ||
		    !(flags & UNIX_ACCEPTCON) || strncmp(name, prefix, plen))
			continue;
		for (size_t i = 0; i < nino; i++)
			if (ino[i] == inode) {
				*len = djp_abstract_addr(a, name + 1);
				found = 0;
				break;
			}
	}
	fclose(f);
	free(ino);
	return found;
}
