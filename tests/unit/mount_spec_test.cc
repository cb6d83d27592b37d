#include "common/mount_spec.h"

#include <gtest/gtest.h>

using crisp::MountSpec;
using crisp::parse_mounts;

namespace {

TEST(MountSpec, SourceOnlyMountsAtItself) {
  auto r = parse_mounts("/data");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], (MountSpec{"/data", "/data", false, ""}));
}

TEST(MountSpec, ListWithFlags) {
  auto r = parse_mounts("/a:/b,/c:/d:ro,/e:/f:rw+rslave,/g//h/:/i/./j");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0], (MountSpec{"/a", "/b", false, ""}));
  EXPECT_EQ((*r)[1], (MountSpec{"/c", "/d", true, ""}));
  EXPECT_EQ((*r)[2], (MountSpec{"/e", "/f", false, "rslave"}));
  EXPECT_EQ((*r)[3], (MountSpec{"/g/h", "/i/j", false, ""}));
}

TEST(MountSpec, TmpfsAndRelativeSources) {
  auto r = parse_mounts("tmpfs:/scratch,./data:/data:ro,../up:/up");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], (MountSpec{"", "/scratch", false, "", true}));
  EXPECT_EQ((*r)[1], (MountSpec{"./data", "/data", true, ""}));
  EXPECT_EQ(crisp::resolve_relative((*r)[1], "/home/u/job").source, "/home/u/job/./data");
  EXPECT_EQ(crisp::resolve_relative((*r)[2], "/w").source, "/w/../up");
  EXPECT_EQ(crisp::resolve_relative((*r)[0], "/w").source, "") << "a tmpfs has no source";
  for (const char* bad : {"tmpfs", "./rel", "umount:/x"}) EXPECT_FALSE(parse_mounts(bad).ok()) << bad;
  EXPECT_NE(parse_mounts("umount:/x").error().find("'umount' source is not supported"), std::string::npos);
}

TEST(MountSpec, RejectsMalformed) {
  for (const char* bad : {"", ",", "/a,", "relative:/x", "/a:relative", "/a:/b:bogus", "/a:/b:ro+rw", "/a:/b:c:d",
                          "/a:/", "/a/../etc:/x", "/a:/x,/b:/x", "/a:/b:private+shared", "/a::ro"}) {
    auto r = parse_mounts(bad);
    EXPECT_FALSE(r.ok()) << "accepted: '" << bad << "'";
    if (!r.ok()) {
      EXPECT_NE(r.error().find("--container-mounts"), std::string::npos);
    }
  }
}

TEST(MountSpec, NormalizePath) {
  EXPECT_EQ(crisp::normalize_path("/"), "/");
  EXPECT_EQ(crisp::normalize_path("//a///b/./"), "/a/b");
}

}  // namespace
