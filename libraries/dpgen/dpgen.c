/* dpgen: the embedded testbed's persistent traffic generator (dpgate).
 *
 * Started once per testbed session inside the TG network namespace, pinned to the TG
 * cores by its parent:  dpgen tg0=dir0.pcap [tg1=dir1.pcap ...]
 * It loads every pcap's frames into memory, opens one send-only AF_PACKET socket per port
 * (protocol 0: it receives nothing; no rings) and prints "ready". Then, one command a line
 * on stdin, one answer a line on stdout:
 *
 *   run <pps_per_dir> <count_per_dir> <deadline_s>
 *       sends <count> frames on every port (looping over its pcap's frames), directions
 *       interleaved, each paced by CLOCK_MONOTONIC against the schedule t0 + k / pps: what
 *       is due is sent (sendmmsg batches of at most 32), never ahead of it; when behind it
 *       catches up as fast as the kernel takes frames, and stops at t0 + deadline_s.
 *       ENOBUFS/EAGAIN: the frame is sent again (counted as retried); other send errors
 *       skip the frame (counted as failed). Answers
 *       "done sent=<a,b> failed=<a,b> retried=<a,b> seconds=<t0 to last frame>"
 *   quit           exits (so does end of input: a dead parent never leaves it sending)
 *
 * Bad input gets one line "error <reason>" (and, at start-up, exit code 2).
 * DPGEN_QDISC_BYPASS set in the environment: PACKET_QDISC_BYPASS on every socket (veth has
 * no qdisc; on this VM it made no measurable difference: 0.52-0.72 vs 0.54-0.68 Mpps).
 * DPGEN_TIME_SEND set: the "done" line also carries send_ns=<a,b>, the time spent inside
 * sendmmsg per port (the kernel's transmit work on the TG core: two clock reads a call more).
 * Plain libc, Linux only. Build: cc -O2 -Wall -o dpgen dpgen.c -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <math.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DPGEN_VERSION "1.0"
#define MAX_PORTS 8
#define BATCH 32
#define MAX_FRAME 16384
#define MAX_FRAMES (1 << 20)

struct port {
	const char *name;
	int fd;
	size_t nframes;
	struct iovec *frames;  /* one iovec per frame, data owned here */
	/* per run */
	uint64_t sent, failed, retried, next; /* next: index of the next frame to send */
	uint64_t send_ns; /* time inside sendmmsg (DPGEN_TIME_SEND set): the kernel's transmit work */
};

static int time_send; /* DPGEN_TIME_SEND in the environment: report send_ns per port */

static struct port ports[MAX_PORTS];
static int nports;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, const char *a, const char *b)
{
	printf("error ");
	printf(fmt, a, b);
	printf("\n");
	fflush(stdout);
	exit(2);
}

static uint32_t rd32(const unsigned char *p, int swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* Classic pcap (µs or ns, either byte order), Ethernet link type only. */
static void load_pcap(struct port *pt, const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char hdr[24], rec[16];
	size_t cap = 64;
	int swap;
	if (!f)
		die("cannot open pcap %s: %s", path, strerror(errno));
	if (fread(hdr, 1, 24, f) != 24)
		die("%s: not a pcap file (%s)", path, "short header");
	uint32_t magic = rd32(hdr, 0);
	if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
		swap = 0;
	else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
		swap = 1;
	else
		die("%s: not a pcap file (%s)", path, "bad magic");
	if (rd32(hdr + 20, swap) != 1)
		die("%s: link type is not Ethernet%s", path, "");
	pt->frames = malloc(cap * sizeof *pt->frames);
	while (fread(rec, 1, 16, f) == 16) {
		uint32_t caplen = rd32(rec + 8, swap);
		if (caplen < 14 || caplen > MAX_FRAME)
			die("%s: frame length out of range%s", path, "");
		if (pt->nframes == MAX_FRAMES)
			die("%s: more than 1048576 frames%s", path, "");
		if (pt->nframes == cap) {
			cap *= 2;
			pt->frames = realloc(pt->frames, cap * sizeof *pt->frames);
		}
		void *buf = malloc(caplen);
		if (!pt->frames || !buf)
			die("%s: out of memory%s", path, "");
		if (fread(buf, 1, caplen, f) != caplen)
			die("%s: truncated frame%s", path, "");
		pt->frames[pt->nframes].iov_base = buf;
		pt->frames[pt->nframes].iov_len = caplen;
		pt->nframes++;
	}
	fclose(f);
	if (!pt->nframes)
		die("%s: no frames%s", path, "");
}

static void open_port(struct port *pt)
{
	struct sockaddr_ll sll;
	unsigned ifindex = if_nametoindex(pt->name);
	if (!ifindex)
		die("no interface %s in this namespace: %s", pt->name, strerror(errno));
	pt->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* protocol 0: receives nothing */
	if (pt->fd < 0)
		die("AF_PACKET socket for %s: %s (needs CAP_NET_RAW)", pt->name, strerror(errno));
	memset(&sll, 0, sizeof sll);
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = 0;
	sll.sll_ifindex = (int)ifindex;
	if (bind(pt->fd, (struct sockaddr *)&sll, sizeof sll) != 0)
		die("bind to %s: %s", pt->name, strerror(errno));
	if (getenv("DPGEN_QDISC_BYPASS")) {
		int one = 1;
		if (setsockopt(pt->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
			die("PACKET_QDISC_BYPASS on %s: %s", pt->name, strerror(errno));
	}
}

/* Send up to n due frames of port pt; returns when a batch went out or failed. */
static void send_due(struct port *pt, uint64_t n)
{
	struct mmsghdr msgs[BATCH];
	if (n > BATCH)
		n = BATCH;
	memset(msgs, 0, sizeof(struct mmsghdr) * n);
	for (uint64_t i = 0; i < n; i++) {
		msgs[i].msg_hdr.msg_iov = &pt->frames[(pt->next + i) % pt->nframes];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	double t = time_send ? now_s() : 0.0;
	int r = sendmmsg(pt->fd, msgs, (unsigned)n, 0);
	if (time_send)
		pt->send_ns += (uint64_t)((now_s() - t) * 1e9);
	if (r > 0) {
		pt->sent += (uint64_t)r;
		pt->next = (pt->next + (uint64_t)r) % pt->nframes;
		return;
	}
	if (r < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)) {
		if (errno != EINTR)
			pt->retried++; /* the same frame is tried again on the next pass */
		return;
	}
	pt->failed++; /* any other error: this frame is given up (counted), like tcpreplay */
	pt->next = (pt->next + 1) % pt->nframes;
}

static void print_list(const char *key, size_t off)
{
	printf(" %s=", key);
	for (int i = 0; i < nports; i++)
		printf(i ? ",%llu" : "%llu", (unsigned long long)*(uint64_t *)((char *)&ports[i] + off));
}

static void run(double pps, uint64_t count, double deadline)
{
	double t0 = now_s(), end = t0 + deadline, last = t0;
	uint64_t done_ports = 0;
	for (int i = 0; i < nports; i++)
		ports[i].sent = ports[i].failed = ports[i].retried = ports[i].send_ns = 0;
	while (done_ports < (uint64_t)nports) {
		double t = now_s();
		if (t >= end)
			break;
		/* frame k is due at t0 + k / pps (k from 0): due = floor((t - t0) * pps) + 1 */
		double dd = floor((t - t0) * pps) + 1.0;
		uint64_t due = dd >= (double)count ? count : (uint64_t)dd;
		int any = 0;
		done_ports = 0;
		for (int i = 0; i < nports; i++) {
			struct port *pt = &ports[i];
			uint64_t handled = pt->sent + pt->failed;
			if (handled >= count) {
				done_ports++;
				continue;
			}
			if (handled < due) {
				send_due(pt, due - handled);
				any = 1;
				last = now_s();
			}
		}
		if (any || done_ports == (uint64_t)nports)
			continue;
		/* nothing due: sleep until shortly before the next frame when that is far off */
		double next = t0 + due / pps;
		if (next > end)
			next = end;
		if (next - t > 200e-6) {
			double s = next - 50e-6;
			struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
	printf("done");
	print_list("sent", offsetof(struct port, sent));
	print_list("failed", offsetof(struct port, failed));
	print_list("retried", offsetof(struct port, retried));
	if (time_send)
		print_list("send_ns", offsetof(struct port, send_ns));
	printf(" seconds=%.6f\n", last - t0);
	fflush(stdout);
}

/* One command line; returns 0 to quit. */
static int command(char *line)
{
	char *save = NULL, *end = NULL;
	char *cmd = strtok_r(line, " \t\r\n", &save);
	if (!cmd) {
		printf("error empty line\n");
	} else if (!strcmp(cmd, "quit")) {
		return 0;
	} else if (!strcmp(cmd, "run")) {
		char *a[4];
		int n = 0;
		while (n < 4 && (a[n] = strtok_r(NULL, " \t\r\n", &save)))
			n++;
		if (n != 3) {
			printf("error run takes 3 arguments: run <pps_per_dir> <count_per_dir> <deadline_s>\n");
			goto out;
		}
		errno = 0;
		double pps = strtod(a[0], &end);
		if (*end || errno || !(pps > 0) || pps > 1e9) {
			printf("error pps_per_dir must be a number in (0, 1e9], got '%s'\n", a[0]);
			goto out;
		}
		unsigned long long count = strtoull(a[1], &end, 10);
		if (*end || errno || a[1][0] == '-' || count < 1 || count > (1ULL << 48)) {
			printf("error count_per_dir must be an integer >= 1, got '%s'\n", a[1]);
			goto out;
		}
		double deadline = strtod(a[2], &end);
		if (*end || errno || !(deadline > 0) || deadline > 86400) {
			printf("error deadline_s must be a number in (0, 86400], got '%s'\n", a[2]);
			goto out;
		}
		run(pps, count, deadline);
		return 1;
	} else {
		printf("error unknown command '%.40s' (run, quit)\n", cmd);
	}
out:
	fflush(stdout);
	return 1;
}

int main(int argc, char **argv)
{
	char line[512];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	time_send = getenv("DPGEN_TIME_SEND") != NULL;
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("dpgen %s\n", DPGEN_VERSION);
		return 0;
	}
	if (argc < 2 || argc - 1 > MAX_PORTS)
		die("usage: dpgen <port>=<pcap> ... (1 to 8 ports)%s%s", "", "");
	for (int i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq || eq == argv[i] || !eq[1])
			die("argument '%s' is not <port>=<pcap>%s", argv[i], "");
		ports[nports].name = strndup(argv[i], (size_t)(eq - argv[i])); /* argv stays as given */
		load_pcap(&ports[nports], eq + 1);
		open_port(&ports[nports]);
		nports++;
	}
	printf("ready\n");
	while (fgets(line, sizeof line, stdin)) {
		if (!strchr(line, '\n') && !feof(stdin)) {
			int c;
			while ((c = getchar()) != EOF && c != '\n')
				;
			printf("error line too long\n");
			continue;
		}
		if (!command(line))
			break;
	}
	return 0;
}
