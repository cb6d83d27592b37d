#include "agent/images/pull_progress.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace crisp {
namespace {

constexpr size_t kManifestMax = 4u << 20;
// Beyond any real image (overlayfs stacks at most 128 layers; a blob of a petabyte): a
// manifest past them is not followed, and sums of sizes cannot overflow.
constexpr size_t kBlobsMax = 1024;
constexpr int64_t kBlobSizeMax = int64_t{1} << 50;

std::optional<Blob> blob_of(const nlohmann::json& d) {
  if (!d.is_object() || !d.contains("digest") || !d["digest"].is_string() || !d.contains("size") ||
      !d["size"].is_number_integer() || d["size"].get<int64_t>() < 0 || d["size"].get<int64_t>() > kBlobSizeMax)
    return std::nullopt;
  return Blob{d["digest"].get<std::string>(), d["size"].get<int64_t>()};
}

}  // namespace

std::optional<std::vector<Blob>> manifest_blobs(const std::string& json) {
  if (json.size() > kManifestMax) return std::nullopt;
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object() || !doc.contains("layers") || !doc["layers"].is_array() || !doc.contains("config") ||
      doc["layers"].size() >= kBlobsMax)
    return std::nullopt;
  std::vector<Blob> out;
  auto config = blob_of(doc["config"]);
  if (!config) return std::nullopt;
  out.push_back(*config);
  for (const auto& layer : doc["layers"]) {
    auto b = blob_of(layer);
    if (!b) return std::nullopt;
    out.push_back(*b);
  }
  return out;
}

std::string ingest_digest(const std::string& ref) {
  size_t dash = ref.find('-');
  if (dash == std::string::npos || ref.find(':', dash) == std::string::npos) return "";
  return ref.substr(dash + 1);
}

bool ingest_of_pull(const IngestBytes& ingest, const std::optional<std::vector<Blob>>& blobs, int64_t since_ns) {
  if (!blobs) return ingest.started_ns >= since_ns;
  std::string digest = ingest_digest(ingest.ref);
  for (const Blob& b : *blobs)
    if (b.digest == digest) return true;
  return false;
}

PullAmount tally(const std::optional<std::vector<Blob>>& blobs, const std::vector<IngestBytes>& ingests,
                 const std::set<std::string>& present, int64_t since_ns) {
  PullAmount out;
  for (const IngestBytes& i : ingests)
    if (ingest_of_pull(i, blobs, since_ns)) {
      out.done += i.offset;
      out.moved += i.offset;
    }
  if (!blobs) return out;
  for (const Blob& b : *blobs) {
    out.total += b.size;
    if (present.count(b.digest)) {
      out.done += b.size;
      out.moved += b.size;
    }
  }
  if (out.done > out.total) out.done = out.total;
  return out;
}

std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1000 && u + 1 < std::size(units)) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0 || v >= 100) std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string progress_line(const std::string& image, const PullAmount& amount, double bytes_per_s) {
  std::string text = "pulling " + image + ": ";
  if (amount.done == 0 && amount.total == 0) return text + "waiting for the registry";
  std::string done = human_bytes(amount.done);
  if (amount.total > 0) {
    std::string total = human_bytes(amount.total);
    // "1.2 of 5.6 GB" when both share a unit.
    size_t sp = done.find(' ');
    if (sp != std::string::npos && total.ends_with(done.substr(sp))) done = done.substr(0, sp);
    text += done + " of " + total;
  } else {
    text += done + " so far";
  }
  return text + ", " + human_bytes(static_cast<int64_t>(bytes_per_s)) + "/s";
}

}  // namespace crisp
