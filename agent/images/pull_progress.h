// How far a pull has come, from what containerd's content store shows: the
// image's manifest (its blobs and their sizes, once fetched), the ingests under
// way and the blobs already committed. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace crisp {

struct Blob {
  std::string digest;
  int64_t size = 0;
};

// An ingest as containerd lists it: ref is "KIND-DIGEST" (layer-sha256:…).
struct IngestBytes {
  std::string ref;
  int64_t offset = 0, total = 0;
  int64_t started_ns = 0;
};

// The config and layers an image manifest names; nullopt for anything else
// (an index, a malformed or oversized document).
std::optional<std::vector<Blob>> manifest_blobs(const std::string& json);

// "layer-sha256:abc" -> "sha256:abc"; empty when ref is not KIND-DIGEST.
std::string ingest_digest(const std::string& ref);

struct PullAmount {
  int64_t done = 0;
  int64_t total = 0;  // 0: not known yet (no manifest)
  // Changes whenever any byte of the pull arrives: the stall limit watches it.
  int64_t moved = 0;
};

// blobs: the manifest's, when known; present: which of them are committed.
// Without a manifest, the ingests started since since_ns are counted.
PullAmount tally(const std::optional<std::vector<Blob>>& blobs, const std::vector<IngestBytes>& ingests,
                 const std::set<std::string>& present, int64_t since_ns);

// Whether an ingest belongs to the pull: one of its blobs, or, without a manifest, started since since_ns.
bool ingest_of_pull(const IngestBytes& ingest, const std::optional<std::vector<Blob>>& blobs, int64_t since_ns);

// "1.2 GB", "350 MB", "12 kB" (decimal units, as registries and crictl show sizes).
std::string human_bytes(int64_t bytes);
// "pulling IMAGE: 1.2 of 5.6 GB, 180 MB/s" ("1.2 GB so far" without a total, "waiting for
// the registry" before anything arrived).
std::string progress_line(const std::string& image, const PullAmount& amount, double bytes_per_s);

}  // namespace crisp
