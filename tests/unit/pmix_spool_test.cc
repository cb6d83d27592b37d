// The PMIx server's spool directory: found by the step's socket name, and only
// among the sockets slurmstepd holds (any user may bind one of that name).
#include "spank/pmix_spool.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace {

// /proc/net/unix as the kernel writes it: a header, then Num RefCount Protocol Flags Type St Inode [Path].
const char kTable[] =
    "Num       RefCount Protocol Flags    Type St Inode Path\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 222 /tmp/user/stepd.slurm.pmix.7.0\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 111 /var/spool/slurmd/stepd.slurm.pmix.7.0\n"
    "0000000000000000: 00000003 00000000 00000000 0001 03 333\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 444 /var/spool/n1/stepd.slurm.pmix.17.0\n"
    "0000000000000000: 00000002 00000000 00010000 0001 01 555 /var/spool/n1/stepd.slurm.pmix.7.01\n";

TEST(PmixSpool, SocketInodeOfAnFdLink) {
  EXPECT_EQ(crisp::socket_inode("socket:[12345]"), "12345");
  EXPECT_EQ(crisp::socket_inode("pipe:[12345]"), std::nullopt);
  EXPECT_EQ(crisp::socket_inode("socket:[12345"), std::nullopt);
  EXPECT_EQ(crisp::socket_inode("/dev/null"), std::nullopt);
  EXPECT_EQ(crisp::socket_inode(""), std::nullopt);
}

TEST(PmixSpool, OnlyTheSocketSlurmstepdHoldsCounts) {
  auto dir = crisp::spool_dir_in(kTable, {"111", "333"}, 7, 0);
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, "/var/spool/slurmd") << "not /tmp/user, a socket of the same name slurmstepd does not hold";
  auto none = crisp::spool_dir_in(kTable, {"333"}, 7, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error(), "cannot find the step's PMIx server (no stepd.slurm.pmix.7.0 socket of its slurmstepd)");
}

TEST(PmixSpool, AnotherStepsSocketIsNotThisOnes) {
  EXPECT_FALSE(crisp::spool_dir_in(kTable, {"444", "555"}, 7, 0).ok()) << "job 17, and step 01";
  EXPECT_FALSE(crisp::spool_dir_in("0: 2 0 10000 1 1 9 /stepd.slurm.pmix.7.0\n", {"9"}, 7, 0).ok())
      << "the name alone, with no directory before it";
}

// The reads: a socket the parent binds is found by its child, as a task finds its slurmstepd's.
TEST(PmixSpool, AChildFindsItsParentsSocket) {
  char tmpl[] = "/tmp/crisp-pmix-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/stepd.slurm.pmix.4242.3";
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto dir = crisp::pmix_spool_dir(4242, 3);
    _exit(!dir ? 10 : *dir == tmpl ? 0 : 11);
  }
  int status = 0;
  waitpid(child, &status, 0);
  close(s);
  unlink(path.c_str());
  rmdir(tmpl);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 not found, 11 another directory";
}

}  // namespace
