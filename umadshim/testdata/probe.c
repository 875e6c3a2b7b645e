/*
 * probe: calls what libibumad calls, with bad arguments too, through the
 * umad shim, and prints one line per check: "name rc errno". The Go test
 * (harness TestShimBadInput) compares them with the kernel's answers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <rdma/ib_user_mad.h>

static void report(const char *name, long rc)
{
	printf("%s %ld %d\n", name, rc, rc < 0 ? errno : 0);
	fflush(stdout);
}

int main(void)
{
	static unsigned char buf[8192];
	void *volatile nullp = NULL; /* a bad buffer the compiler cannot see */
	struct ib_user_mad_reg_req req;
	struct ib_user_mad_reg_req2 req2;
	struct pollfd pfd;
	DIR *d;
	int fd, n = 0;

	errno = 0;
	report("open_umad9", open("/dev/infiniband/umad9", O_RDWR));
	report("open_sys_escape", open("/sys/class/infiniband/ibfab0/../../../../etc/hostname", O_RDONLY));
	d = opendir("/sys/class/infiniband");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (!strcmp(e->d_name, "ibfab0"))
				n++;
		closedir(d);
	}
	report("opendir_cas", n);
	fd = open("/dev/infiniband/umad0", O_RDWR | O_NONBLOCK);
	report("open_umad0", fd < 0 ? -1 : 0);
	if (fd < 0)
		return 1;
	report("ioctl_null_reg", ioctl(fd, IB_USER_MAD_REGISTER_AGENT, NULL));
	report("ioctl_null_unreg", ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, NULL));
	report("ioctl_unknown", ioctl(fd, 0xdead, NULL));
	memset(&req, 0, sizeof(req));
	req.qpn = 5;
	req.mgmt_class = 3;
	report("ioctl_bad_qpn", ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req));
	memset(&req2, 0, sizeof(req2));
	req2.qpn = 1;
	req2.mgmt_class = 3;
	req2.flags = 0x80;
	report("ioctl_bad_flags", ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req2));
	report("ioctl_bad_flags_cap", req2.flags);
	report("read_empty", read(fd, buf, sizeof(buf)));
	report("enable_pkey", ioctl(fd, IB_USER_MAD_ENABLE_PKEY, NULL));
	memset(&req, 0, sizeof(req));
	req.qpn = 1;
	req.mgmt_class = 3;
	req.mgmt_class_version = 2;
	req.rmpp_version = 1;
	req.method_mask[0] = 1UL << 0x12; /* GetTable */
	report("register_sa", ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req));
	report("unregister_bad", ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &(unsigned int){7}));
	printf("READY\n");
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	report("poll", poll(&pfd, 1, 10000));
	report("read_enospc", read(fd, buf, 64 + 256));
	report("enospc_length", *(unsigned int *)(buf + 16));
	report("read_short", read(fd, buf, 30));
	report("read_null", read(fd, nullp, sizeof(buf)));
	report("read_whole", read(fd, buf, sizeof(buf)));
	report("read_after", read(fd, buf, sizeof(buf)));
	report("write_garbage", write(fd, "garbage", 7));
	report("write_null", write(fd, nullp, 7));
	{
		/* An SA table of 46,550 NodeRecords is one write of 5.2 MB: the
		 * kernel takes it, the shim's datagram transport cannot. */
		size_t huge = 5213656;
		unsigned char *h = calloc(1, huge);
		report("write_huge", h ? write(fd, h, huge) : -1);
		free(h);
	}
	report("close", close(fd));
	report("close_again", close(fd));
	return 0;
}
