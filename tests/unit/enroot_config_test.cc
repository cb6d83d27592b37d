// enroot's configuration files in a squashfs image, as its import writes them.
#include "agent/images/enroot_config.h"

#include <gtest/gtest.h>

#include <map>

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

TEST(EnrootConfig, ImportWritesWhatItsParserReadsBack) {
  crisp::EnrootImageConfig c;
  c.env = {"PATH=/usr/bin:/bin", "PYTORCH_VERSION=2.3"};
  c.entrypoint = {"/opt/nvidia/entrypoint.sh"};
  c.cmd = {"sh", "-c", "echo it's"};
  c.volumes = {"/data"};
  c.labels = {{"maintainer", "NVIDIA"}};
  c.working_dir = "/workspace";
  std::map<std::string, std::string> files;
  for (auto& [path, text] : crisp::enroot_files(c)) files[path] = text;
  EXPECT_EQ(files["/etc/environment"], "PATH=/usr/bin:/bin\nPYTORCH_VERSION=2.3\n");
  EXPECT_EQ(files["/etc/fstab"], "${ENROOT_ROOTFS}/data /data none x-create=dir,bind,rw,nosuid,nodev\n");
  EXPECT_EQ(crisp::parse_enroot_environment(files["/etc/environment"]), c.env);
  EXPECT_EQ(crisp::parse_enroot_workdir(files["/etc/rc"]), "/workspace");
  EXPECT_NE(files["/etc/rc"].find("# maintainer NVIDIA\n"), std::string::npos);
  EXPECT_NE(files["/etc/rc"].find("    exec '/opt/nvidia/entrypoint.sh' \"$@\"\n"), std::string::npos);
  EXPECT_NE(files["/etc/rc"].find("    exec '/opt/nvidia/entrypoint.sh' 'sh' '-c' 'echo it'\\''s'\n"), std::string::npos)
      << files["/etc/rc"];
  EXPECT_EQ(crisp::parse_enroot_entrypoint(files["/etc/rc"]), c.entrypoint) << "what import writes, read back";
  EXPECT_EQ(crisp::parse_enroot_entrypoint("    exec 'a b' 'it'\\''s' $'x\\ny' \"$@\"\n"),
            (std::vector<std::string>{"a b", "it's", "x\ny"}));
  EXPECT_EQ(crisp::parse_enroot_entrypoint("    exec \"$@\"\n"), std::vector<std::string>{}) << "no entrypoint";
  EXPECT_EQ(crisp::parse_enroot_entrypoint("    exec $(evil) \"$@\"\n"), std::vector<std::string>{}) << "not @Q's";
  EXPECT_EQ(crisp::parse_enroot_entrypoint("    exec 'unterminated \"$@\"\n"), std::vector<std::string>{});
  crisp::EnrootImageConfig empty;
  for (auto& [path, text] : crisp::enroot_files(empty)) files[path] = text;
  EXPECT_NE(files["/etc/rc"].find("cd \"/\" && unset OLDPWD"), std::string::npos);
  EXPECT_NE(files["/etc/rc"].find("    exec '/bin/sh'\n"), std::string::npos) << "no entrypoint nor cmd: a shell";
}

}  // namespace
