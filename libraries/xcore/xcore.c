/* xcore: the round trip of one cache line between two pinned cores (dpgate.exec.xcore).
 *
 * usage: xcore CPU_A CPU_B WARMUP
 * Pins itself to CPU_A and a forked sibling to CPU_B; both share one anonymous cache line.
 * Prints "ready", then for each line "N" on stdin bounces the line WARMUP + N times (the
 * sibling blocks on a pipe between requests) and prints "NANOSECONDS N" for the last N.
 * Both processes die with their parent (PR_SET_PDEATHSIG). Plain libc, no shell.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu, const char *who)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "xcore: cannot pin the %s to CPU %d: ", who, cpu);
        perror("sched_setaffinity");
        exit(2);
    }
}

static void bounce(volatile uint8_t *line, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        __atomic_store_n(line, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != 0)
            ;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: xcore CPU_A CPU_B WARMUP\n");
        return 2;
    }
    int a = atoi(argv[1]), b = atoi(argv[2]);
    uint64_t warm = strtoull(argv[3], NULL, 10);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    volatile uint8_t *line = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fd[2];
    if (line == MAP_FAILED || pipe(fd) != 0) {
        perror("xcore: mmap/pipe");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("xcore: fork");
        return 2;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(fd[1]);
        pin(b, "sibling");
        uint64_t n;
        while (read(fd[0], &n, sizeof n) == (ssize_t)sizeof n) {
            for (uint64_t i = 0; i < n; i++) {
                while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != 1)
                    ;
                __atomic_store_n(line, 0, __ATOMIC_RELEASE);
            }
        }
        _exit(0);
    }
    close(fd[0]);
    pin(a, "probe");
    printf("ready\n");
    fflush(stdout);
    char buf[64];
    while (fgets(buf, sizeof buf, stdin)) {
        uint64_t n = strtoull(buf, NULL, 10), total = n + warm;
        if (write(fd[1], &total, sizeof total) != (ssize_t)sizeof total)
            return 3;
        struct timespec t0, t1;
        bounce(line, warm);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bounce(line, n);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
        printf("%lld %llu\n", ns, (unsigned long long)n);
        fflush(stdout);
    }
    return 0;
}
