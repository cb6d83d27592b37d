#include "agent/images/registry_auth.h"

#include <gtest/gtest.h>

#include "agent/images/pull_error.h"

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

TEST(PullErrors, SayWhatToFix) {
  const std::string ref = "r:5000/x:1";
  EXPECT_EQ(crisp::explain_pull_error(ref, "failed to resolve reference \"r:5000/x:1\": not found"),
            "image r:5000/x:1 was not found in its registry: check the name and tag");
  EXPECT_EQ(crisp::explain_pull_error(ref, "pulling from host r:5000 failed with status code 401 Unauthorized: unauthorized"),
            "the registry refused access to image r:5000/x:1: put credentials for its registry in "
            "~/.config/enroot/.credentials (netrc) or ~/.docker/config.json");
  EXPECT_NE(crisp::explain_pull_error(ref, "dial tcp 127.0.0.1:5999: connect: connection refused")
                .find("cannot reach the registry of image r:5000/x:1"),
            std::string::npos);
  EXPECT_EQ(crisp::explain_pull_error(ref, "disk full"), "cannot pull image r:5000/x:1: disk full");
}

}  // namespace
