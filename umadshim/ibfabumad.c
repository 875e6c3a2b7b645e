/*
 * libibfabumad: an LD_PRELOAD library that puts a program linked with
 * libibumad on a soft HCA of ibfab instead of the kernel's ib_umad.
 *
 * It answers three kinds of path:
 *   /sys/class/infiniband*      from a private copy of the HCA's sysfs tree
 *                               (a temporary directory filled from the
 *                               endpoint; each file is refreshed from the
 *                               endpoint when it is opened);
 *   /dev/infiniband/umadN       with a SOCK_SEQPACKET connection to the
 *                               endpoint, a real descriptor that poll and
 *                               select see as the device; write passes
 *                               through, read keeps the device's ENOSPC
 *                               rule, ioctl goes to a control connection;
 *   /dev/infiniband/issmN       with a connection that holds IsSM.
 * The protocol is package umadproto's (doc.go there). Everything else goes
 * to libc untouched. Bad arguments give the errno the kernel would give.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <signal.h>
#include <unistd.h>
#include <rdma/ib_user_mad.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the umadproto control messages are little-endian: host order here"
#endif

#define SYS_PREFIX "/sys/class/"
#define DEV_PREFIX "/dev/infiniband/"
#define PROTO_MAGIC 0x55464249u
#define PROTO_VERSION 1
#define ROLE_UMAD 1
#define ROLE_CONTROL 2
#define ROLE_ISSM 3
#define OP_REGISTER 1
#define OP_UNREGISTER 2
#define OP_ENABLE_PKEY 3
#define OP_SYSFS 4
#define OP_SYSFS_LIST 5
#define MAX_CONTROL (64 * 1024)
#define HDR_OLD 56
#define HDR_NEW 64
#define MAX_FDS 4096
/* BIG_MAD: a write this large that fails for its size is reported. */
#define BIG_MAD (1 << 20)

struct umad_fd {
	int used;
	int ctl;      /* control connection bound to this umad connection */
	int hdr_size; /* 56, or 64 once the pkey_index ABI is on */
};

static struct umad_fd fds[MAX_FDS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char sysroot[256]; /* the private sysfs copy; "" until made */
static pid_t sysroot_pid;
static int sys_ctl = -1; /* control connection for sysfs reads */

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fopen64)(const char *, const char *);
static DIR *(*real_opendir)(const char *);
static int (*real_scandir)(const char *, struct dirent ***, int (*)(const struct dirent *),
			   int (*)(const struct dirent **, const struct dirent **));
static int (*real_scandir64)(const char *, struct dirent64 ***, int (*)(const struct dirent64 *),
			     int (*)(const struct dirent64 **, const struct dirent64 **));
static int (*real_close)(int);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_ioctl)(int, unsigned long, ...);

static void resolve(void)
{
	static int done;
	if (done)
		return;
	real_open = dlsym(RTLD_NEXT, "open");
	real_open64 = dlsym(RTLD_NEXT, "open64");
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_openat64 = dlsym(RTLD_NEXT, "openat64");
	real___open_2 = dlsym(RTLD_NEXT, "__open_2");
	real___open64_2 = dlsym(RTLD_NEXT, "__open64_2");
	real_fopen = dlsym(RTLD_NEXT, "fopen");
	real_fopen64 = dlsym(RTLD_NEXT, "fopen64");
	real_opendir = dlsym(RTLD_NEXT, "opendir");
	real_scandir = dlsym(RTLD_NEXT, "scandir");
	real_scandir64 = dlsym(RTLD_NEXT, "scandir64");
	real_close = dlsym(RTLD_NEXT, "close");
	real_read = dlsym(RTLD_NEXT, "read");
	real_write = dlsym(RTLD_NEXT, "write");
	real_ioctl = dlsym(RTLD_NEXT, "ioctl");
	done = 1;
}

/* init resolves libc's functions when the library is loaded, before the
 * program has threads that could race to do it. */
__attribute__((constructor)) static void init(void)
{
	resolve();
}

static void put32(unsigned char *b, uint32_t v) { memcpy(b, &v, 4); }
static uint32_t get32(const unsigned char *b) { uint32_t v; memcpy(&v, b, 4); return v; }

/* sock_name returns the endpoint's abstract socket name. */
static const char *sock_name(void)
{
	const char *s = getenv("IBFAB_UMAD_SOCKET");
	return s && *s ? s : "ibfab-umad";
}

/* dial connects to the endpoint with a hello of role, port and token;
 * on success it returns the descriptor and stores the reply's token. */
static int dial(int role, int port, uint32_t token, uint32_t *out_token)
{
	struct sockaddr_un sa;
	const char *name = sock_name();
	size_t n = strlen(name);
	unsigned char hello[16], reply[17];
	struct timeval tv = {5, 0};
	int fd, e;
	ssize_t r;

	if (n + 1 > sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, name, n);
	if (connect(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + n) < 0) {
		e = errno;
		real_close(fd);
		errno = e == ECONNREFUSED || e == ENOENT ? ENODEV : e;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	put32(hello, PROTO_MAGIC);
	hello[4] = PROTO_VERSION & 0xff;
	hello[5] = PROTO_VERSION >> 8;
	hello[6] = role;
	hello[7] = port;
	put32(hello + 8, token);
	put32(hello + 12, 0);
	if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello))
		goto fail;
	r = recv(fd, reply, sizeof(reply), 0);
	if (r != 16 || get32(reply) != PROTO_MAGIC) {
		errno = EIO;
		goto fail;
	}
	if (get32(reply + 12)) {
		errno = (int)get32(reply + 12);
		goto fail;
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (out_token)
		*out_token = get32(reply + 8);
	return fd;
fail:
	e = errno;
	real_close(fd);
	errno = e;
	return -1;
}

/* call makes one control request; it returns the result's length (into
 * res, of size cap) or -1 with errno. */
static ssize_t call(int ctl, uint32_t op, const void *arg, size_t argn, unsigned char *res, size_t cap)
{
	unsigned char *buf;
	ssize_t r;
	uint32_t e;

	if (argn > MAX_CONTROL - 4) {
		errno = EINVAL;
		return -1;
	}
	buf = malloc(MAX_CONTROL);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	put32(buf, op);
	if (argn)
		memcpy(buf + 4, arg, argn);
	if (send(ctl, buf, 4 + argn, MSG_NOSIGNAL) != (ssize_t)(4 + argn)) {
		free(buf);
		errno = EIO;
		return -1;
	}
	r = recv(ctl, buf, MAX_CONTROL, 0);
	if (r < 4) {
		free(buf);
		errno = EIO;
		return -1;
	}
	e = get32(buf);
	if (e) {
		free(buf);
		errno = (int)e;
		return -1;
	}
	r -= 4;
	if ((size_t)r > cap)
		r = cap;
	if (res && r)
		memcpy(res, buf + 4, r);
	free(buf);
	return r;
}

/* ---- sysfs ---- */

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(p);
}

static void remove_sysroot(void)
{
	if (sysroot[0] && getpid() == sysroot_pid)
		nftw(sysroot, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* sweep_stale removes the copies of processes that are gone: a program
 * killed by a signal runs no atexit. Copies are named ibfab-umad-PID-*. */
static void sweep_stale(const char *tmp)
{
	DIR *d = real_opendir(tmp);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		char *end;
		long pid;
		if (strncmp(e->d_name, "ibfab-umad-", 11))
			continue;
		pid = strtol(e->d_name + 11, &end, 10);
		if (end == e->d_name + 11 || *end != '-' || pid <= 0 || pid > INT_MAX)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name) < (int)sizeof(path))
			nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	closedir(d);
}

/* sys_control returns the shared control connection; lock held. */
static int sys_control(void)
{
	if (sys_ctl < 0)
		sys_ctl = dial(ROLE_CONTROL, 0, 0, NULL);
	return sys_ctl;
}

/* write_file writes n bytes to path (made if missing). */
static void write_file(const char *path, const unsigned char *b, size_t n)
{
	int fd = real_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w <= 0)
			break;
		b += w;
		n -= w;
	}
	real_close(fd);
}

/* make_sysroot fills the private sysfs copy from the endpoint; lock held.
 * Without an endpoint the copy stays empty, and every sysfs path is
 * missing (ENOENT), as on a host without the ib_umad module. */
static void make_sysroot(void)
{
	const char *tmp = getenv("TMPDIR");
	unsigned char *buf, *p, *end;
	ssize_t n;
	int ctl;

	if (sysroot[0])
		return;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	sweep_stale(tmp);
	snprintf(sysroot, sizeof(sysroot), "%s/ibfab-umad-%d-XXXXXX", tmp, (int)getpid());
	if (!mkdtemp(sysroot)) {
		snprintf(sysroot, sizeof(sysroot), "/nonexistent-ibfab-umad");
		return;
	}
	sysroot_pid = getpid();
	atexit(remove_sysroot);
	ctl = sys_control();
	if (ctl < 0)
		return;
	buf = malloc(MAX_CONTROL);
	if (!buf)
		return;
	n = call(ctl, OP_SYSFS_LIST, NULL, 0, buf, MAX_CONTROL);
	for (p = buf, end = buf + (n > 0 ? n : 0); p + 3 <= end;) {
		char path[PATH_MAX];
		int dir = p[0] == 'd';
		size_t pl = p[1] | (size_t)p[2] << 8, cl;
		p += 3;
		if (p + pl + 2 > end || pl == 0 || pl > 1024 || memchr(p, 0, pl) || memmem(p, pl, "..", 2))
			break;
		if (snprintf(path, sizeof(path), "%s/%.*s", sysroot, (int)pl, p) >= (int)sizeof(path))
			break;
		p += pl;
		cl = p[0] | (size_t)p[1] << 8;
		p += 2;
		if (p + cl > end)
			break;
		if (dir)
			mkdir(path, 0755);
		else
			write_file(path, p, cl);
		p += cl;
	}
	free(buf);
}

/* is_sys reports whether path is under /sys/class/infiniband or
 * /sys/class/infiniband_mad (or is one of them). */
static int is_sys(const char *path)
{
	const char *r;
	if (!path || strncmp(path, SYS_PREFIX "infiniband", sizeof(SYS_PREFIX "infiniband") - 1))
		return 0;
	r = path + sizeof(SYS_PREFIX "infiniband") - 1;
	if (!strncmp(r, "_mad", 4))
		r += 4;
	return *r == 0 || *r == '/';
}

/* map_sys rewrites a sysfs path into the private copy, refreshing the
 * file from the endpoint when refresh is set. */
static const char *map_sys(const char *path, char *out, size_t n, int refresh)
{
	const char *rel = path + sizeof(SYS_PREFIX) - 1;
	pthread_mutex_lock(&lock);
	resolve();
	make_sysroot();
	if (snprintf(out, n, "%s/%s", sysroot, rel) >= (int)n || strstr(rel, "..")) {
		/* not a path of the tree: make it one that does not exist */
		snprintf(out, n, "%s/%s", sysroot, "-");
		refresh = 0;
	}
	if (refresh && sysroot_pid) {
		unsigned char buf[4096];
		int ctl = sys_control();
		ssize_t r = ctl < 0 ? -1 : call(ctl, OP_SYSFS, rel, strlen(rel), buf, sizeof(buf));
		if (r >= 0)
			write_file(out, buf, r);
		else if (errno == EIO && ctl >= 0) { /* the endpoint went: reconnect next time */
			real_close(sys_ctl);
			sys_ctl = -1;
		}
	}
	pthread_mutex_unlock(&lock);
	return out;
}

/* ---- devices ---- */

/* dev_index parses /dev/infiniband/<kind>N; -1 if path is not one. */
static int dev_index(const char *path, const char *kind)
{
	size_t k = strlen(kind);
	const char *p;
	char *end;
	long v;
	if (!path || strncmp(path, DEV_PREFIX, sizeof(DEV_PREFIX) - 1))
		return -1;
	p = path + sizeof(DEV_PREFIX) - 1;
	if (strncmp(p, kind, k) || p[k] < '0' || p[k] > '9')
		return -1;
	v = strtol(p + k, &end, 10);
	if (*end || v < 0 || v > 254)
		return -1;
	return (int)v;
}

/* big_sndbuf lets one write carry a whole RMPP message (an SA's table):
 * a unix datagram may be as large as the sender's buffer. Without
 * CAP_NET_ADMIN the buffer stays at the system's wmem_max. */
static void big_sndbuf(int fd)
{
	int size = 16 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static int open_umad(int idx, int flags)
{
	uint32_t token = 0;
	int fd, ctl, e;

	fd = dial(ROLE_UMAD, idx + 1, 0, &token);
	if (fd < 0)
		return -1;
	ctl = dial(ROLE_CONTROL, idx + 1, token, NULL);
	if (ctl < 0 || fd >= MAX_FDS) {
		e = ctl < 0 ? errno : EMFILE;
		if (ctl >= 0)
			real_close(ctl);
		real_close(fd);
		errno = e;
		return -1;
	}
	big_sndbuf(fd);
	if (flags & O_NONBLOCK)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (!(flags & O_CLOEXEC))
		fcntl(fd, F_SETFD, 0);
	pthread_mutex_lock(&lock);
	fds[fd].used = 1;
	fds[fd].ctl = ctl;
	fds[fd].hdr_size = HDR_OLD;
	pthread_mutex_unlock(&lock);
	return fd;
}

static int open_issm(int idx)
{
	return dial(ROLE_ISSM, idx + 1, 0, NULL);
}

/* special_open opens path if it is ours: the result, or -2 when not. */
static int special_open(const char *path, int flags)
{
	char buf[PATH_MAX];
	int idx;
	resolve();
	if (is_sys(path))
		return real_open(map_sys(path, buf, sizeof(buf), 1), flags & ~(O_CREAT | O_TRUNC), 0);
	if ((idx = dev_index(path, "umad")) >= 0)
		return open_umad(idx, flags);
	if ((idx = dev_index(path, "issm")) >= 0)
		return open_issm(idx);
	return -2;
}

static int is_absolute(const char *path)
{
	const char *volatile p = path; /* callers may pass NULL despite the prototype */
	return p && p[0] == '/';
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int r = special_open(path, flags);
	if (r != -2)
		return r;
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int r = special_open(path, flags);
	if (r != -2)
		return r;
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return real_open64 ? real_open64(path, flags, mode) : real_open(path, flags, mode);
}

int __open_2(const char *path, int flags)
{
	int r = special_open(path, flags);
	return r != -2 ? r : real___open_2(path, flags);
}

int __open64_2(const char *path, int flags)
{
	int r = special_open(path, flags);
	return r != -2 ? r : real___open64_2(path, flags);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int r = is_absolute(path) ? special_open(path, flags) : (resolve(), -2);
	if (r != -2)
		return r;
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return real_openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int r = is_absolute(path) ? special_open(path, flags) : (resolve(), -2);
	if (r != -2)
		return r;
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return real_openat64 ? real_openat64(dirfd, path, flags, mode) : real_openat(dirfd, path, flags, mode);
}

FILE *fopen(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	resolve();
	return real_fopen(is_sys(path) ? map_sys(path, buf, sizeof(buf), 1) : path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	resolve();
	if (is_sys(path))
		path = map_sys(path, buf, sizeof(buf), 1);
	return real_fopen64 ? real_fopen64(path, mode) : real_fopen(path, mode);
}

DIR *opendir(const char *path)
{
	char buf[PATH_MAX];
	resolve();
	return real_opendir(is_sys(path) ? map_sys(path, buf, sizeof(buf), 0) : path);
}

int scandir(const char *path, struct dirent ***list, int (*sel)(const struct dirent *),
	    int (*cmp)(const struct dirent **, const struct dirent **))
{
	char buf[PATH_MAX];
	resolve();
	return real_scandir(is_sys(path) ? map_sys(path, buf, sizeof(buf), 0) : path, list, sel, cmp);
}

int scandir64(const char *path, struct dirent64 ***list, int (*sel)(const struct dirent64 *),
	      int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
	char buf[PATH_MAX];
	resolve();
	return real_scandir64(is_sys(path) ? map_sys(path, buf, sizeof(buf), 0) : path, list, sel, cmp);
}

int close(int fd)
{
	resolve();
	if (fd >= 0 && fd < MAX_FDS) {
		int ctl = -1;
		pthread_mutex_lock(&lock);
		if (fds[fd].used) {
			ctl = fds[fd].ctl;
			fds[fd].used = 0;
			fds[fd].ctl = -1;
		}
		pthread_mutex_unlock(&lock);
		if (ctl >= 0)
			real_close(ctl);
	}
	return real_close(fd);
}

/* umad_of returns fd's entry, or NULL when fd is not a umad device. */
static struct umad_fd *umad_of(int fd)
{
	return fd >= 0 && fd < MAX_FDS && fds[fd].used ? &fds[fd] : NULL;
}

/* umad_read reads one MAD as the device does: the whole of it, or, when
 * buf is too small for it but holds the header and a first MAD, the
 * header alone (its length field telling the size) with ENOSPC, the MAD
 * staying queued. */
static ssize_t umad_read(int fd, struct umad_fd *u, void *buf, size_t count)
{
	int nb = fcntl(fd, F_GETFL) & O_NONBLOCK;
	ssize_t n;
	size_t hs = u->hdr_size, first;

	if (!buf) {
		errno = EFAULT;
		return -1;
	}
	n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | (nb ? MSG_DONTWAIT : 0));
	if (n < 0)
		return -1;
	if (n == 0) { /* the endpoint closed the device */
		errno = EIO;
		return -1;
	}
	if ((size_t)n <= count)
		return recv(fd, buf, count, 0);
	first = (size_t)n - hs < 256 ? (size_t)n - hs : 256;
	if (count < hs + first) {
		errno = EINVAL;
		return -1;
	}
	if (recv(fd, buf, hs, MSG_PEEK) < 0)
		return -1;
	errno = ENOSPC;
	return -1;
}

ssize_t read(int fd, void *buf, size_t count)
{
	struct umad_fd *u;
	resolve();
	u = umad_of(fd);
	return u ? umad_read(fd, u, buf, count) : real_read(fd, buf, count);
}

/* write on a umad device sends the datagram without SIGPIPE: a device
 * whose endpoint went away fails the write (EIO), as a removed device
 * does, instead of killing the program. */
ssize_t write(int fd, const void *buf, size_t count)
{
	ssize_t n;
	resolve();
	if (!umad_of(fd))
		return real_write(fd, buf, count);
	if (!buf) {
		errno = EFAULT;
		return -1;
	}
	n = send(fd, buf, count, MSG_NOSIGNAL);
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN))
		errno = EIO;
	if (n < 0 && (errno == ENOBUFS || errno == EMSGSIZE) && count > BIG_MAD) {
		/* The kernel's umad takes an RMPP message of any length; a unix
		 * datagram's is bounded (its linear part is one allocation, at
		 * most 4 MiB): say so rather than leave a bare ENOBUFS. */
		int e = errno;
		fprintf(stderr, "libibfabumad: a MAD of %zu bytes is more than ibfab's umad transport carries (%s)\n",
			count, strerror(e));
		errno = e;
	}
	return n;
}

ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	if (count > buflen) {
		fprintf(stderr, "libibfabumad: read of %zu bytes into %zu\n", count, buflen);
		abort();
	}
	return read(fd, buf, count);
}

/* reg_request sends a registration (the fields of reg_req2) and returns
 * the agent id or -1. */
static int reg_request(struct umad_fd *u, uint32_t qpn, uint8_t class, uint8_t version, uint8_t rmpp,
		       uint32_t flags, const uint32_t mask[4], uint32_t oui)
{
	unsigned char arg[32], res[4];
	int i;
	put32(arg, qpn);
	arg[4] = class;
	arg[5] = version;
	arg[6] = rmpp;
	arg[7] = 0;
	put32(arg + 8, flags);
	for (i = 0; i < 4; i++)
		put32(arg + 12 + 4 * i, mask[i]);
	put32(arg + 28, oui);
	if (call(u->ctl, OP_REGISTER, arg, sizeof(arg), res, sizeof(res)) != 4)
		return -1;
	return (int)get32(res);
}

static int umad_ioctl(struct umad_fd *u, unsigned long req, void *argp)
{
	switch (req) {
	case IB_USER_MAD_REGISTER_AGENT: {
		struct ib_user_mad_reg_req *r = argp;
		uint32_t mask[4];
		int id;
		if (!r) {
			errno = EFAULT;
			return -1;
		}
		memcpy(mask, r->method_mask, sizeof(mask));
		id = reg_request(u, r->qpn, r->mgmt_class, r->mgmt_class_version, r->rmpp_version, 0, mask,
				 (uint32_t)r->oui[0] << 16 | (uint32_t)r->oui[1] << 8 | r->oui[2]);
		if (id < 0)
			return -1;
		r->id = id;
		return 0;
	}
	case IB_USER_MAD_REGISTER_AGENT2: {
		struct ib_user_mad_reg_req2 *r = argp;
		uint32_t mask[4];
		int id;
		if (!r) {
			errno = EFAULT;
			return -1;
		}
		if (r->flags & ~IB_USER_MAD_REG_FLAGS_CAP) {
			r->flags = IB_USER_MAD_REG_FLAGS_CAP;
			errno = EINVAL;
			return -1;
		}
		if (r->oui & 0xff000000u) {
			errno = EINVAL;
			return -1;
		}
		memcpy(mask, r->method_mask, sizeof(mask));
		id = reg_request(u, r->qpn, r->mgmt_class, r->mgmt_class_version, r->rmpp_version, r->flags, mask, r->oui);
		if (id < 0)
			return -1;
		r->id = id;
		return 0;
	}
	case IB_USER_MAD_UNREGISTER_AGENT: {
		uint32_t *id = argp;
		unsigned char arg[4];
		if (!id) {
			errno = EFAULT;
			return -1;
		}
		put32(arg, *id);
		return call(u->ctl, OP_UNREGISTER, arg, 4, NULL, 0) < 0 ? -1 : 0;
	}
	case IB_USER_MAD_ENABLE_PKEY:
		if (call(u->ctl, OP_ENABLE_PKEY, NULL, 0, NULL, 0) < 0)
			return -1;
		u->hdr_size = HDR_NEW;
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *argp;
	struct umad_fd *u;
	resolve();
	va_start(ap, req);
	argp = va_arg(ap, void *);
	va_end(ap);
	u = umad_of(fd);
	if (u)
		return umad_ioctl(u, req, argp);
	return real_ioctl(fd, req, argp);
}
