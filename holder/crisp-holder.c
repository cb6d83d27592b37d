/* crisp-holder: the only process of a step's container. It keeps the
 * container's namespaces alive for the tasks that join them, and exits when
 * slurmstepd (argv[1]) exits or on SIGTERM, so a lost step leaves an exited
 * container for crispd's sweep rather than a live one. Static, any image. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int main(int argc, char **argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return 1;
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) return 1;

  struct pollfd fds[2] = {{sfd, POLLIN, 0}, {-1, POLLIN, 0}};
  if (argc > 1) {
    long pid = strtol(argv[1], NULL, 10);
    if (pid > 0) {
      int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
      if (pfd < 0) return errno == ESRCH ? 0 : 1; /* slurmstepd already gone */
      fds[1].fd = pfd;
    }
  }
  for (;;) {
    int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? 1 : 0;
  }
}
