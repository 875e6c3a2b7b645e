/*
 * burst: writes N directed-route NodeInfo Gets (hop count from argv) to
 * the umad device before it reads any answer, then reads N answers, as a
 * client sweeping a large subnet may; prints
 * "sent S answered A timeouts T order B" (B 1 when the answers came in
 * the order of the requests). The Go test (harness TestUMADBurst) runs it
 * through the umad shim and through libumad2sim.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <rdma/ib_user_mad.h>

#define MAD_SIZE 256

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	int hops = argc > 2 ? atoi(argv[2]) : 0;
	unsigned char buf[64 + MAD_SIZE];
	struct ib_user_mad_reg_req req;
	/*
	 * The header without pkey_index (IB_USER_MAD_ENABLE_PKEY not asked
	 * for): the kernel takes it, and libumad2sim reads writes with it
	 * whatever that ioctl answered.
	 */
	size_t hdr = 56;
	long sent = 0, answered = 0, timeouts = 0;
	int order = 1;
	uint32_t id;
	int fd = open("/dev/infiniband/umad0", O_RDWR);

	if (fd < 0) {
		perror("open");
		return 1;
	}
	memset(&req, 0, sizeof(req));
	req.qpn = 0;
	req.mgmt_class = 0x81; /* directed-route SMPs, as a client */
	req.mgmt_class_version = 1;
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req) < 0) {
		perror("register");
		return 1;
	}
	id = req.id;
	for (long i = 0; i < n; i++) {
		struct ib_user_mad *u = (struct ib_user_mad *)buf;
		unsigned char *m = buf + hdr;
		uint64_t tid = (uint64_t)(i + 1);

		memset(buf, 0, sizeof(buf));
		u->hdr.id = id;
		u->hdr.timeout_ms = 20000;
		u->hdr.retries = 0;
		u->hdr.lid = 0xffff; /* permissive, the same in either byte order */
		m[0] = 1;        /* base version */
		m[1] = 0x81;     /* SubnDirected */
		m[2] = 1;        /* class version */
		m[3] = 0x01;     /* Get */
		m[7] = hops;     /* hop count; hop pointer 0 */
		for (int b = 0; b < 8; b++)
			m[8 + b] = tid >> (56 - 8 * b);
		m[16] = 0x00;    /* NodeInfo */
		m[17] = 0x11;
		m[32] = 0xff;    /* DrSLID, DrDLID permissive */
		m[33] = 0xff;
		m[34] = 0xff;
		m[35] = 0xff;
		for (int h = 1; h <= hops; h++)
			m[128 + h] = 1; /* out of port 1 at every hop */
		if (write(fd, buf, hdr + MAD_SIZE) != (ssize_t)(hdr + MAD_SIZE)) {
			perror("write");
			break;
		}
		sent++;
	}
	for (long i = 0; i < sent; i++) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct ib_user_mad *u = (struct ib_user_mad *)buf;
		uint64_t tid = 0;

		if (poll(&pfd, 1, 30000) <= 0) {
			fprintf(stderr, "no answer after %ld\n", i);
			break;
		}
		if (read(fd, buf, sizeof(buf)) < (ssize_t)(hdr + 24)) {
			perror("read");
			break;
		}
		if (u->hdr.status) {
			timeouts++;
			continue;
		}
		for (int b = 0; b < 8; b++)
			tid = tid << 8 | buf[hdr + 8 + b];
		if ((tid & 0xffffffffu) != (uint64_t)(answered + 1))
			order = 0;
		answered++;
	}
	printf("sent %ld answered %ld timeouts %ld order %d\n", sent, answered, timeouts, order);
	return answered == n ? 0 : 2;
}
