#include "common/image_ref.h"

#include <gtest/gtest.h>

using crisp::parse_image_ref;

namespace {

std::string canon(const char* s) {
  auto r = parse_image_ref(s);
  EXPECT_TRUE(r.ok()) << s << ": " << (r.ok() ? "" : r.error());
  return r.ok() ? r->canonical() : "";
}

TEST(ImageRef, DockerHubDefaults) {
  EXPECT_EQ(canon("ubuntu"), "docker.io/library/ubuntu:latest");
  EXPECT_EQ(canon("ubuntu:22.04"), "docker.io/library/ubuntu:22.04");
  EXPECT_EQ(canon("nvidia/cuda:12.2.0-base"), "docker.io/nvidia/cuda:12.2.0-base");
  EXPECT_EQ(canon("docker://ubuntu:22.04"), "docker.io/library/ubuntu:22.04");
}

TEST(ImageRef, RegistryWithPort) {
  EXPECT_EQ(canon("127.0.0.1:5000/busybox"), "127.0.0.1:5000/busybox:latest");
  EXPECT_EQ(canon("localhost/x/y:1"), "localhost/x/y:1");
  EXPECT_EQ(canon("nvcr.io/nvidia/pytorch:24.05-py3"), "nvcr.io/nvidia/pytorch:24.05-py3");
}

TEST(ImageRef, EnrootForm) {
  auto r = parse_image_ref("alice@nvcr.io#nvidia/pytorch:24.05-py3");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->user, "alice");
  EXPECT_EQ(r->registry, "nvcr.io");
  EXPECT_EQ(r->canonical(), "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(canon("docker://127.0.0.1:5000#busybox"), "127.0.0.1:5000/busybox:latest");
  EXPECT_EQ(canon("localhost#x/y"), "localhost/x/y:latest");
}

TEST(ImageRef, EnrootUserWithoutRegistry) {
  auto r = parse_image_ref("alice@ubuntu:22.04");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->user, "alice");
  EXPECT_EQ(r->canonical(), "docker.io/library/ubuntu:22.04");
  EXPECT_EQ(parse_image_ref("alice@nvidia/cuda")->canonical(), "docker.io/nvidia/cuda:latest");
}

// Found by the fuzzer: "alice0-2#x" became "alice0-2/x", which containerd
// reads as Docker Hub's user alice0-2, another image than the one asked for.
TEST(ImageRef, AnEnrootRegistryMustReadAsOneAgain) {
  auto r = parse_image_ref("alice0-2#crisp-test/private");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("registry 'alice0-2' needs a dot or a port"), std::string::npos) << r.error();
  for (const char* s : {"nvcr.io#nvidia/pytorch:24.05-py3", "localhost#x", "u@127.0.0.1:5002#a/b", "alice@ubuntu"}) {
    auto ref = parse_image_ref(s);
    ASSERT_TRUE(ref.ok()) << s;
    EXPECT_EQ(parse_image_ref(ref->canonical())->canonical(), ref->canonical()) << s;
  }
}

TEST(ImageRef, DigestPinsWithoutTag) {
  std::string d = "sha256:" + std::string(64, 'a');
  EXPECT_EQ(canon(("busybox@" + d).c_str()), "docker.io/library/busybox@" + d);
  EXPECT_EQ(canon(("busybox:1@" + d).c_str()), "docker.io/library/busybox:1@" + d);
}

TEST(ImageRef, RejectsMalformed) {
  for (const char* bad : {"", "docker://", "Ubuntu", "ubuntu:", "ubuntu:bad tag", "a//b", "/tmp/x.sqsh",
                          "./x.sqsh", "busybox@sha256:123", "-x#busybox", "@nvcr.io#x", "ubu$ntu", "a..b",
                          "host:99999999/x"}) {
    auto r = parse_image_ref(bad);
    EXPECT_FALSE(r.ok()) << "accepted: '" << bad << "'";
    if (!r.ok()) {
      EXPECT_NE(r.error().find("invalid image reference"), std::string::npos);
    }
  }
}

TEST(ImageRef, FilesArePathsStartingWithSlashOrDot) {
  EXPECT_FALSE(parse_image_ref("/shared/images/pytorch.sqsh").ok()) << "a file is no registry reference";
  for (const char* file : {"/shared/images/pytorch.sqsh", "./x.sqsh", "../up/x.sqsh", ".hidden"}) {
    EXPECT_TRUE(crisp::is_image_file(file)) << file;
    EXPECT_TRUE(crisp::check_image_file(file).ok()) << file;
  }
  for (const char* ref : {"busybox", "nvcr.io#nvidia/pytorch:24.01", "docker://x", ""})
    EXPECT_FALSE(crisp::is_image_file(ref)) << ref;
  for (const char* dir : {"/images/", ".", "..", "./"}) {
    auto r = crisp::check_image_file(dir);
    ASSERT_FALSE(r.ok()) << dir;
    EXPECT_NE(r.error().find("names a directory"), std::string::npos) << r.error();
  }
  EXPECT_FALSE(crisp::check_image_file(std::string("/a\0b", 4)).ok());
}

}  // namespace
