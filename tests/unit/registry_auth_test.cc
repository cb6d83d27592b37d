#include "agent/registry_auth.h"

#include <gtest/gtest.h>

#include "agent/entrypoint.h"

namespace {

using crisp::RegistryCredential;

TEST(Netrc, FindsTheMachineAndTheLoginAsked) {
  const char* text =
      "machine nvcr.io login $oauthtoken password nvapi-1\n"
      "machine 127.0.0.1:5002\n  login alice\n  password pw-a\n"
      "machine 127.0.0.1:5002 login bob password pw-b\n"
      "machine auth.docker.io login hubuser password hubpw\n";
  EXPECT_EQ(crisp::find_in_netrc(text, "nvcr.io", ""), (RegistryCredential{"$oauthtoken", "nvapi-1"}));
  EXPECT_EQ(crisp::find_in_netrc(text, "127.0.0.1:5002", ""), (RegistryCredential{"alice", "pw-a"}));
  EXPECT_EQ(crisp::find_in_netrc(text, "127.0.0.1:5002", "bob"), (RegistryCredential{"bob", "pw-b"}));
  EXPECT_EQ(crisp::find_in_netrc(text, "docker.io", ""), (RegistryCredential{"hubuser", "hubpw"}));
  EXPECT_FALSE(crisp::find_in_netrc(text, "127.0.0.1:5002", "carol"));
  EXPECT_FALSE(crisp::find_in_netrc(text, "ghcr.io", ""));
  EXPECT_FALSE(crisp::find_in_netrc("machine", "x", ""));
  EXPECT_FALSE(crisp::find_in_netrc("", "x", ""));
}

TEST(DockerConfig, AuthAndPlainFieldsAndHubAliases) {
  // "alice:pw:with:colons" in base64
  const char* json = R"({"auths": {
      "https://127.0.0.1:5002/v2/": {"auth": "YWxpY2U6cHc6d2l0aDpjb2xvbnM="},
      "https://index.docker.io/v1/": {"username": "hub", "password": "hpw"},
      "broken.example": {"auth": "!!!"}}})";
  EXPECT_EQ(crisp::find_in_docker_config(json, "127.0.0.1:5002", ""), (RegistryCredential{"alice", "pw:with:colons"}));
  EXPECT_EQ(crisp::find_in_docker_config(json, "docker.io", ""), (RegistryCredential{"hub", "hpw"}));
  EXPECT_FALSE(crisp::find_in_docker_config(json, "127.0.0.1:5002", "bob"));
  EXPECT_FALSE(crisp::find_in_docker_config(json, "broken.example", ""));
  EXPECT_FALSE(crisp::find_in_docker_config("not json", "docker.io", ""));
  EXPECT_FALSE(crisp::find_in_docker_config(R"({"credsStore": "desktop"})", "docker.io", ""));
}

TEST(CriLog, MessagesOfBothStreams) {
  std::string m;
  ASSERT_TRUE(crisp::parse_cri_log_line("2026-12-02T16:42:55.123Z stdout F hello world", m));
  EXPECT_EQ(m, "hello world");
  ASSERT_TRUE(crisp::parse_cri_log_line("2026-12-02T16:42:55.123Z stderr P partial", m));
  EXPECT_EQ(m, "partial");
  EXPECT_FALSE(crisp::parse_cri_log_line("garbage", m));
  EXPECT_FALSE(crisp::parse_cri_log_line("t other F x", m));
}

}  // namespace
