/* crisp-holder: the only process of a step's container. It keeps the
 * container's namespaces alive for the tasks that join them, and exits when
 * slurmstepd (argv[1]) exits or on SIGTERM, so a lost step leaves an exited
 * container for crispd's sweep rather than a live one. Static, any image.
 *
 * "crisp-holder STEPD session FLAGS SHM_SIZE" is a step's namespace keeper
 * (agent/host/step_session.h): crispd starts it inside the container, already
 * root in a user namespace of the user's; it makes the step's mount namespace
 * and those FLAGS asks (1 net, 2 ipc, 4 uts), reports on fd 3, then holds them
 * as the holder holds the container's. */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

enum { kNet = 1, kIpc = 2, kUts = 4 };
/* crispd's word that the container's root is the user's (its default action: ignored). */
enum { kRootGiven = SIGURG };

static int loopback_up(void) {
  struct ifreq ifr;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP;
    rc = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  close(s);
  return rc;
}

/* The step numbers follow step_session.cc's: 6 onwards. */
static int session(unsigned long flags, const char *shm_size) {
  int ns = CLONE_NEWNS | (flags & kNet ? CLONE_NEWNET : 0) | (flags & kIpc ? CLONE_NEWIPC : 0) |
           (flags & kUts ? CLONE_NEWUTS : 0);
  char options[128];
  if (unshare(ns) != 0) return 6;
  if (flags & kIpc) {
    snprintf(options, sizeof options, "mode=1777,size=%s", shm_size);
    if (mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options) != 0) return 7;
    if (mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) return 8;
  }
  if ((flags & kNet) && loopback_up() != 0) return 9;
  return 0;
}

int main(int argc, char **argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, kRootGiven);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return 1;
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) return 1;

  /* A container's holder is the user's process until crispd has given it its
   * root: undumpable till then (crispd's SIGURG, from root alone, ends that), the
   * user's other processes cannot ptrace it into making namespaces of its own
   * (crispd refuses those too, user_rootfs.h). A session keeper is root in the
   * user's own user namespace: nothing to guard there. */
  if (!(argc == 5 && strcmp(argv[2], "session") == 0) && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 1;
  if (argc == 5 && strcmp(argv[2], "session") == 0) {
    int msg[2] = {session(strtoul(argv[3], NULL, 10), argv[4]), errno};
    if (write(3, msg, sizeof msg) != (ssize_t)sizeof msg || msg[0] != 0) return 1;
    close(3);
  }
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
    if (n < 0) return 1;
    if (fds[1].revents) return 0; /* slurmstepd exited */
    struct signalfd_siginfo si;
    if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si) return 1;
    if (si.ssi_signo != kRootGiven) return 0;
    if (si.ssi_uid == 0) (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  }
}
