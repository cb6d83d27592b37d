// enroot's configuration files in a squashfs image, as its import writes them.
#include "agent/images/enroot_config.h"

#include <gtest/gtest.h>

namespace {

TEST(EnrootConfig, EnvironmentKeepsNameValueLinesOnly) {
  auto env = crisp::parse_enroot_environment(
      "PATH=/usr/local/bin:/usr/bin\r\n# a comment\n\nexport X=1\n=nothing\n1BAD=x\nLANG=C.UTF-8\nEMPTY=\nA_B2=x=y\n");
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8", "EMPTY=", "A_B2=x=y"}));
  std::string many;
  for (int i = 0; i < 10000; ++i) many += "V" + std::to_string(i) + "=1\n";
  EXPECT_EQ(crisp::parse_enroot_environment(many).size(), crisp::kMaxImageEnv) << "bounded";
}

TEST(EnrootConfig, WorkdirFromTheRcScript) {
  const std::string rc =
      "# org.opencontainers.image.title demo\n\n"
      "mkdir -p \"/workspace\" 2> /dev/null\n"
      "cd \"/workspace\" && unset OLDPWD || exit 1\n\n"
      "if [ -s /etc/rc.local ]; then\n    . /etc/rc.local\nfi\n\n"
      "if [ $# -gt 0 ]; then\n    exec \"$@\"\nelse\n    exec '/bin/sh'\nfi\n";
  EXPECT_EQ(crisp::parse_enroot_workdir(rc), "/workspace");
  EXPECT_EQ(crisp::parse_enroot_workdir("\tcd \"/\" && unset OLDPWD || exit 1\n"), "/");
  EXPECT_EQ(crisp::parse_enroot_workdir(""), "");
  EXPECT_EQ(crisp::parse_enroot_workdir("cd \"relative\" && unset OLDPWD || exit 1\n"), "");
  EXPECT_EQ(crisp::parse_enroot_workdir("cd \"/a\" \"/b\" && unset OLDPWD || exit 1\n"), "") << "not enroot's line";
}

}  // namespace
