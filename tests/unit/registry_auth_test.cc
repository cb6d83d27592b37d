#include "agent/images/registry_auth.h"

#include <gtest/gtest.h>

#include "agent/images/pull_error.h"

namespace {

using crisp::RegistryCredential;

// What a lookup found (nullopt: nothing); a parse error fails the test.
std::optional<RegistryCredential> ok(const crisp::FoundCredential& r) {
  EXPECT_TRUE(r.ok()) << r.error();
  return r ? *r : std::nullopt;
}
// The error a lookup gave; empty when it gave none.
std::string error_of(const crisp::FoundCredential& r) { return r ? "" : r.error(); }

TEST(Netrc, FindsTheMachineAndTheLoginAsked) {
  const char* text =
      "machine nvcr.io login $oauthtoken password nvapi-1\n"
      "machine 127.0.0.1:5002\n  login alice\n  password pw-a\n"
      "machine 127.0.0.1:5002 login bob password pw-b\n"
      "machine auth.docker.io login hubuser password hubpw\n";
  EXPECT_EQ(ok(crisp::find_in_netrc(text, "nvcr.io", "")), (RegistryCredential{"$oauthtoken", "nvapi-1"}));
  EXPECT_EQ(ok(crisp::find_in_netrc(text, "127.0.0.1:5002", "")), (RegistryCredential{"alice", "pw-a"}));
  EXPECT_EQ(ok(crisp::find_in_netrc(text, "127.0.0.1:5002", "bob")), (RegistryCredential{"bob", "pw-b"}));
  EXPECT_EQ(ok(crisp::find_in_netrc(text, "docker.io", "")), (RegistryCredential{"hubuser", "hubpw"}));
  EXPECT_FALSE(ok(crisp::find_in_netrc(text, "127.0.0.1:5002", "carol")));
  EXPECT_FALSE(ok(crisp::find_in_netrc(text, "ghcr.io", "")));
  EXPECT_FALSE(ok(crisp::find_in_netrc("", "x", "")));
}

TEST(Netrc, AKeywordWithoutItsValueIsAnError) {
  EXPECT_EQ(error_of(crisp::find_in_netrc("machine", "x", "")), "it ends with 'machine' and no value after it");
  EXPECT_EQ(error_of(crisp::find_in_netrc("machine x login u password", "x", "")),
            "it ends with 'password' and no value after it");
}

TEST(DockerConfig, AuthAndPlainFieldsAndHubAliases) {
  // "alice:pw:with:colons" in base64
  const char* json = R"({"auths": {
      "https://127.0.0.1:5002/v2/": {"auth": "YWxpY2U6cHc6d2l0aDpjb2xvbnM="},
      "https://index.docker.io/v1/": {"username": "hub", "password": "hpw"},
      "helper.example": {}, "empty.example": {"auth": ""}}})";
  EXPECT_EQ(ok(crisp::find_in_docker_config(json, "127.0.0.1:5002", "")), (RegistryCredential{"alice", "pw:with:colons"}));
  EXPECT_EQ(ok(crisp::find_in_docker_config(json, "docker.io", "")), (RegistryCredential{"hub", "hpw"}));
  EXPECT_FALSE(ok(crisp::find_in_docker_config(json, "127.0.0.1:5002", "bob")));
  EXPECT_FALSE(ok(crisp::find_in_docker_config(json, "helper.example", ""))) << "a credential helper's entry";
  EXPECT_FALSE(ok(crisp::find_in_docker_config(json, "empty.example", "")));
  EXPECT_FALSE(ok(crisp::find_in_docker_config(R"({"credsStore": "desktop"})", "docker.io", "")));
}

// What users write by mistake (or on purpose) is an error that says what is wrong, never an exception.
TEST(DockerConfig, MalformedFilesAreErrorsNotExceptions) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"auths": []})", "\"auths\" is not an object"},
      {R"({"auths": {"docker.io": {"username": 1}}})", "auths[\"docker.io\"].username is not a string"},
      {R"({"auths": {"docker.io": {"username": "u", "password": null}}})", "auths[\"docker.io\"].password is not a string"},
      {R"({"auths": {"docker.io": {"auth": 5}}})", "auths[\"docker.io\"].auth is not a string"},
      {R"({"auths": {"docker.io": {"auth": "!!!"}}})", "auths[\"docker.io\"].auth is not base64 of USER:PASSWORD"},
      {R"({"auths": {"docker.io": "x"}})", "auths[\"docker.io\"] is not an object"},
  };
  for (const auto& [json, error] : cases) EXPECT_EQ(error_of(crisp::find_in_docker_config(json, "docker.io", "")), error) << json;
  EXPECT_TRUE(crisp::find_in_docker_config(R"({"auths": {"other.io": {"username": 1}}})", "docker.io", "").ok())
      << "an entry for another registry is not read";
}

TEST(PullErrors, SayWhatToFix) {
  const std::string ref = "r:5000/x:1";
  auto line = [&](const std::string& e) { return crisp::explain_pull_error(ref, e, 2).line; };
  EXPECT_EQ(line("failed to resolve reference \"r:5000/x:1\": not found"),
            "image r:5000/x:1 was not found in its registry: check the name and tag");
  EXPECT_EQ(line("pulling from host r:5000 failed with status code 401 Unauthorized: unauthorized"),
            "the registry r:5000 refused access to image r:5000/x:1 (401 Unauthorized): put credentials for it in "
            "~/.config/enroot/.credentials (netrc) or ~/.docker/config.json");
  EXPECT_NE(line("dial tcp 127.0.0.1:5999: connect: connection refused").find("cannot reach the registry r:5000 of image r:5000/x:1"),
            std::string::npos);
  EXPECT_EQ(line("disk full"), "cannot pull image r:5000/x:1: disk full");
}

}  // namespace

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "agent/images/credentials.h"

namespace {

// A home of uid 65534's with enroot's and Docker's files, read with that uid's rights.
class CredentialsLookup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "reading as another user needs root";
    char tmpl[] = "/tmp/crisp-home-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    ASSERT_EQ(system(("mkdir -p " + home_ + "/.config/enroot " + home_ + "/.docker && chown -R 65534:65534 " + home_ +
                      " && chmod 0755 " + home_).c_str()),
              0);
    user_ = {{65534, 65534, {}}, home_};
    node_file_ = home_ + "-node.json";
  }
  void TearDown() override { (void)!system(("rm -rf " + home_ + " " + node_file_).c_str()); }
  void write(const std::string& path, const std::string& text, uid_t owner = 65534, mode_t mode = 0600) {
    std::ofstream(path) << text;
    ASSERT_EQ(chown(path.c_str(), owner, owner), 0);
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }
  std::string home_, node_file_;
  crisp::UserFiles user_;
};

TEST_F(CredentialsLookup, EnrootsFileFirstThenDockersThenTheNodes) {
  write(home_ + "/.docker/config.json", R"({"auths":{"r.example":{"username":"dock","password":"d"}}})");
  write(node_file_, R"({"auths":{"r.example":{"username":"node","password":"n"},"other.example":{"username":"node","password":"n"}}})",
        0, 0600);
  auto user_of = [&](const crisp::UserFiles* user, const char* registry) {
    auto c = ok(crisp::credentials_for(user, node_file_, registry, ""));
    return c ? c->username : "(none)";
  };
  EXPECT_EQ(user_of(&user_, "r.example"), "dock") << "the user's Docker file, without an enroot one";
  write(home_ + "/.config/enroot/.credentials", "machine r.example login en password e\n");
  EXPECT_EQ(user_of(&user_, "r.example"), "en") << "enroot's wins";
  EXPECT_EQ(user_of(&user_, "other.example"), "node") << "the node's, last";
  EXPECT_EQ(user_of(nullptr, "r.example"), "node") << "no user: the node's";
  EXPECT_FALSE(ok(crisp::credentials_for(&user_, "", "third.example", ""))) << "none: an anonymous pull";
}

TEST_F(CredentialsLookup, AFileTheUserCannotReadIsNotUsed) {
  // Root's file in the user's home, which the user cannot read: root must not read it for them.
  write(home_ + "/.docker/config.json", R"({"auths":{"r.example":{"username":"roots","password":"x"}}})", 0, 0600);
  EXPECT_FALSE(ok(crisp::credentials_for(&user_, "", "r.example", "")));
  // Nor one the user links to a file of root's.
  ASSERT_EQ(unlink((home_ + "/.docker/config.json").c_str()), 0);
  write(node_file_, R"({"auths":{"r.example":{"username":"node","password":"n"}}})", 0, 0600);
  ASSERT_EQ(symlink(node_file_.c_str(), (home_ + "/.docker/config.json").c_str()), 0);
  EXPECT_FALSE(ok(crisp::credentials_for(&user_, "", "r.example", "")));
}

TEST_F(CredentialsLookup, TheImagesUserPicksTheEntry) {
  write(home_ + "/.config/enroot/.credentials",
        "machine r.example login alice password a\nmachine r.example login bob password b\n");
  auto bob = ok(crisp::credentials_for(&user_, "", "r.example", "bob"));
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->password, "b");
  EXPECT_FALSE(ok(crisp::credentials_for(&user_, "", "r.example", "carol")));
}

// Each answered with an error naming the file, quickly: never a hang, never an exception.
TEST_F(CredentialsLookup, MalformedOrHostileFilesAreErrorsNamingThem) {
  std::string netrc = home_ + "/.config/enroot/.credentials", docker = home_ + "/.docker/config.json";
  write(docker, R"({"auths":{"r.example":{"username":1}}})");
  EXPECT_EQ(error_of(crisp::credentials_for(&user_, "", "r.example", "")),
            docker + ": auths[\"r.example\"].username is not a string; fix or remove it");
  ASSERT_EQ(mkfifo(netrc.c_str(), 0600), 0);
  ASSERT_EQ(chown(netrc.c_str(), 65534, 65534), 0);
  EXPECT_EQ(error_of(crisp::credentials_for(&user_, "", "r.example", "")), netrc + " is not a regular file");
  ASSERT_EQ(unlink(netrc.c_str()), 0);
  write(netrc, std::string(2 << 20, 'x'));
  EXPECT_EQ(error_of(crisp::credentials_for(&user_, "", "r.example", "")), netrc + " is larger than 1048576 bytes");
}

}  // namespace
