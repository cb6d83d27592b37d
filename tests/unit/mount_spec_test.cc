#include "common/mount_spec.h"

#include <gtest/gtest.h>

using crisp::MountSpec;
using crisp::parse_mounts;

namespace {

MountSpec spec(std::string source, std::string target, bool readonly, std::string propagation, bool tmpfs = false) {
  MountSpec m;
  m.source = std::move(source);
  m.target = std::move(target);
  m.readonly = readonly;
  m.propagation = std::move(propagation);
  m.tmpfs = tmpfs;
  return m;
}

TEST(MountSpec, SourceOnlyMountsAtItself) {
  auto r = parse_mounts("/data");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], spec("/data", "/data", false, ""));
}

TEST(MountSpec, ListWithFlags) {
  auto r = parse_mounts("/a:/b,/c:/d:ro,/e:/f:rw+rslave,/g//h/:/i/./j");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0], spec("/a", "/b", false, ""));
  EXPECT_EQ((*r)[1], spec("/c", "/d", true, ""));
  EXPECT_EQ((*r)[2], spec("/e", "/f", false, "rslave"));
  EXPECT_EQ((*r)[3], spec("/g/h", "/i/j", false, ""));
}

TEST(MountSpec, TmpfsAndRelativeSources) {
  auto r = parse_mounts("tmpfs:/scratch,./data:/data:ro,../up:/up");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], spec("", "/scratch", false, "", true));
  EXPECT_EQ((*r)[1], spec("./data", "/data", true, ""));
  EXPECT_EQ(crisp::resolve_relative((*r)[1], "/home/u/job").source, "/home/u/job/./data");
  EXPECT_EQ(crisp::resolve_relative((*r)[2], "/w").source, "/w/../up");
  EXPECT_EQ(crisp::resolve_relative((*r)[0], "/w").source, "") << "a tmpfs has no source";
  for (const char* bad : {"tmpfs", "./rel"}) EXPECT_FALSE(parse_mounts(bad).ok()) << bad;
}

// Pyxis's umount:DST, with enroot's nofail and silent; it may name a destination an entry mounts.
TEST(MountSpec, UmountEntries) {
  auto r = parse_mounts("umount:/root,/data:/root,umount:/scratch//x/:nofail+silent");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_TRUE((*r)[0].umount);
  EXPECT_EQ((*r)[0].target, "/root");
  EXPECT_EQ((*r)[0].source, "");
  EXPECT_FALSE((*r)[0].nofail);
  EXPECT_FALSE((*r)[1].umount);
  EXPECT_TRUE((*r)[2].nofail);
  EXPECT_EQ((*r)[2].target, "/scratch/x");
  EXPECT_EQ(crisp::resolve_relative((*r)[0], "/w").source, "");
  for (const char* bad : {"umount", "umount:x", "umount:/", "umount:/x:ro", "umount:/../x"})
    EXPECT_FALSE(parse_mounts(bad).ok()) << bad;
  EXPECT_NE(parse_mounts("umount").error().find("umount needs the path to unmount"), std::string::npos);
  EXPECT_NE(parse_mounts("umount:/x:ro").error().find("unknown flag 'ro' for umount"), std::string::npos);
}

TEST(MountSpec, TmpfsOptionsAndUnbindable) {
  auto r = parse_mounts("tmpfs:/t:huge=within_size+size=1G+mode=1777+nr_inodes=10k,/a:/b:unbindable+ro,tmpfs:/p:size=50%");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)[0].tmpfs_options, "huge=within_size,size=1G,mode=1777,nr_inodes=10k");
  EXPECT_EQ((*r)[1].propagation, "unbindable");
  EXPECT_TRUE((*r)[1].readonly);
  EXPECT_EQ((*r)[2].tmpfs_options, "size=50%");
  for (const char* bad : {"tmpfs:/t:size=1T", "tmpfs:/t:uid=0", "tmpfs:/t:mode=999", "tmpfs:/t:huge=yes",
                          "tmpfs:/t:size=", "/a:/b:size=1G", "tmpfs:/t:nr_inodes=5%", "tmpfs:/t:mode=07777"})
    EXPECT_FALSE(parse_mounts(bad).ok()) << bad;
  EXPECT_TRUE(crisp::check_tmpfs_options("size=1g,huge=always").ok());
  EXPECT_TRUE(crisp::check_tmpfs_options("").ok());
  for (const char* bad : {"uid=0", "size=1g,gid=0", "size=1g,", "mode=0700,nosuid=0"})
    EXPECT_FALSE(crisp::check_tmpfs_options(bad).ok()) << bad;
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
