// How far a pull has come, from the content store's view; the lines users see.
#include <gtest/gtest.h>

#include "agent/images/pull_error.h"
#include "agent/images/pull_progress.h"

namespace {

using crisp::Blob;
using crisp::IngestBytes;

const char* kManifest = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.manifest.v1+json",
  "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:c0", "size": 1000},
  "layers": [
    {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:l1", "size": 3000000000},
    {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:l2", "size": 2600000000}
  ]
})";

TEST(PullProgress, AManifestNamesItsConfigAndLayers) {
  auto blobs = crisp::manifest_blobs(kManifest);
  ASSERT_TRUE(blobs);
  ASSERT_EQ(blobs->size(), 3u);
  EXPECT_EQ((*blobs)[1].digest, "sha256:l1");
  EXPECT_EQ((*blobs)[2].size, 2600000000);
  EXPECT_FALSE(crisp::manifest_blobs(R"({"manifests": [{"digest": "sha256:m", "size": 1}]})")) << "an index";
  EXPECT_FALSE(crisp::manifest_blobs("not json"));
  EXPECT_FALSE(crisp::manifest_blobs(R"({"config": {"digest": "sha256:c"}, "layers": []})")) << "no size";
  EXPECT_FALSE(crisp::manifest_blobs(R"({"config": {"digest": "sha256:c", "size": -1}, "layers": []})"));
  EXPECT_FALSE(crisp::manifest_blobs(std::string(5u << 20, ' '))) << "bounded";
  EXPECT_FALSE(crisp::manifest_blobs(R"({"config": {"digest": "sha256:c", "size": 18446744073709551615}, "layers": []})"))
      << "sizes that would overflow a sum";
  std::string many = R"({"config": {"digest": "sha256:c", "size": 1}, "layers": [)";
  for (int i = 0; i < 2000; ++i) many += std::string(i ? "," : "") + R"({"digest": "sha256:l", "size": 1})";
  EXPECT_FALSE(crisp::manifest_blobs(many + "]}")) << "a user's image cannot make crispd ask about 2000 blobs a second";
}

TEST(PullProgress, IngestRefsNameTheirDigest) {
  EXPECT_EQ(crisp::ingest_digest("layer-sha256:abc"), "sha256:abc");
  EXPECT_EQ(crisp::ingest_digest("manifest-sha256:abc"), "sha256:abc");
  EXPECT_EQ(crisp::ingest_digest("nodash"), "");
  EXPECT_EQ(crisp::ingest_digest("layer-nocolon"), "");
}

TEST(PullProgress, CountsCommittedBlobsAndIngestsOfTheManifest) {
  auto blobs = crisp::manifest_blobs(kManifest);
  std::vector<IngestBytes> ingests = {{"layer-sha256:l2", 200000000, 2600000000, 5},
                                      {"layer-sha256:other", 999, 1000, 5}};  // another pull's
  auto a = crisp::tally(blobs, ingests, {"sha256:c0", "sha256:l1"}, 0);
  EXPECT_EQ(a.total, 5600001000);
  EXPECT_EQ(a.done, 3200001000);
  EXPECT_EQ(crisp::progress_line("r/x:1", a, 180e6), "pulling r/x:1: 3.2 of 5.6 GB, 180 MB/s");
}

TEST(PullProgress, WithoutAManifestCountsTheIngestsStartedSinceThePull) {
  std::vector<IngestBytes> ingests = {{"layer-sha256:a", 1200000, 0, 100}, {"layer-sha256:old", 5, 0, 10}};
  auto a = crisp::tally(std::nullopt, ingests, {}, 50);
  EXPECT_EQ(a.done, 1200000);
  EXPECT_EQ(a.total, 0);
  EXPECT_EQ(crisp::progress_line("r/x:1", a, 2100000), "pulling r/x:1: 1.2 MB so far, 2.1 MB/s");
  EXPECT_EQ(crisp::progress_line("r/x:1", {}, 0), "pulling r/x:1: waiting for the registry");
}

TEST(PullProgress, AnyByteMovesThePull) {
  auto blobs = crisp::manifest_blobs(kManifest);
  auto before = crisp::tally(blobs, {{"layer-sha256:l1", 10, 0, 0}}, {}, 0);
  auto after = crisp::tally(blobs, {{"layer-sha256:l1", 11, 0, 0}}, {}, 0);
  auto committed = crisp::tally(blobs, {}, {"sha256:l1"}, 0);
  EXPECT_NE(before.moved, after.moved);
  EXPECT_NE(after.moved, committed.moved) << "an ingest that became a blob";
}

TEST(PullProgress, BytesInDecimalUnits) {
  EXPECT_EQ(crisp::human_bytes(0), "0 B");
  EXPECT_EQ(crisp::human_bytes(999), "999 B");
  EXPECT_EQ(crisp::human_bytes(12000), "12.0 kB");
  EXPECT_EQ(crisp::human_bytes(350000000), "350 MB");
  EXPECT_EQ(crisp::human_bytes(5600000000), "5.6 GB");
}

// containerd 1.6's own texts, as crispd logged them against the dev registries.
TEST(PullErrors, EachRegistryAnswerGetsItsLine) {
  const std::string ref = "127.0.0.1:5004/x:1";
  auto why = [&](const std::string& tail) {
    return crisp::explain_pull_error(ref, "PullImage: failed to pull and unpack image \"" + ref +
                                              "\": failed to resolve reference \"" + ref + "\": " + tail, 2);
  };
  EXPECT_EQ(why("pulling from host 127.0.0.1:5004 failed with status code [manifests 1]: 429 Too Many Requests").kind,
            crisp::PullFailure::kRateLimited);
  EXPECT_EQ(why("pulling from host 127.0.0.1:5004 failed with status code [manifests 1]: 403 Forbidden").line,
            "the registry 127.0.0.1:5004 forbids access to image 127.0.0.1:5004/x:1 (403 Forbidden): these credentials "
            "may not pull it; ask the image's owner for access");
  EXPECT_EQ(why("127.0.0.1:5004/x:1: not found").kind, crisp::PullFailure::kNotFound);
  EXPECT_EQ(why("failed to do request: Head \"https://no.invalid/v2/x/manifests/1\": dial tcp: lookup no.invalid on "
                "10.0.0.53:53: no such host").kind,
            crisp::PullFailure::kDns);
  EXPECT_EQ(why("failed to do request: Head \"https://127.0.0.1:5443/v2/x/manifests/1\": tls: failed to verify "
                "certificate: x509: certificate signed by unknown authority").kind,
            crisp::PullFailure::kTls);
  EXPECT_EQ(why("failed to copy: write /var/lib/crisp/containerd/ingest/x/data: no space left on device").kind,
            crisp::PullFailure::kNoSpace);
  EXPECT_EQ(why("failed to do request: dial tcp 127.0.0.1:5999: connect: connection refused").kind,
            crisp::PullFailure::kUnreachable);
  EXPECT_EQ(why("layer sha256:4290abc403def: unexpected EOF").kind, crisp::PullFailure::kOther)
      << "status codes are not read out of digests";
  EXPECT_EQ(crisp::stall_line(ref, std::chrono::seconds(60)),
            "the registry 127.0.0.1:5004 sent nothing for 60 s while pulling image 127.0.0.1:5004/x:1: pull abandoned; "
            "try again later, or tell the admins if it persists");
}

}  // namespace
