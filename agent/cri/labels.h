// The CRI labels that are crispd's only state: what a restarted crispd, the
// reconcile sweep and crictl users read back.
#pragma once

#include <cstdint>
#include <string>

namespace crisp::labels {

inline constexpr const char* kManaged = "crisp.slurm/managed";
inline constexpr const char* kJob = "crisp.slurm/job";
inline constexpr const char* kStep = "crisp.slurm/step";
inline constexpr const char* kUid = "crisp.slurm/uid";
inline constexpr const char* kUser = "crisp.slurm/user";
inline constexpr const char* kNode = "crisp.slurm/node";
inline constexpr const char* kImage = "crisp.slurm/image";
inline constexpr const char* kName = "crisp.slurm/name";              // a named container
inline constexpr const char* kEntrypoint = "crisp.slurm/entrypoint";  // "true": its env is the holder's
inline constexpr const char* kImageFile = "crisp.slurm/image-file";      // "true": image is a squashfs file
inline constexpr const char* kImageWorkdir = "crisp.slurm/image-workdir";  // that image's WorkingDir
inline constexpr const char* kTmpfs = "crisp.slurm/tmpfs";            // host dir of its tmpfs mounts
inline constexpr const char* kHcaView = "crisp.slurm/hca-view";       // host dir of its /sys/class/infiniband
// "true": a spare, made ahead for its user and image; which job claimed it is
// crispd's claim record (agent/spares/claims.h), as CRI labels cannot change.
inline constexpr const char* kSpare = "crisp.slurm/spare";
// What crictl prints in its POD, NAMESPACE and NAME columns.
inline constexpr const char* kPodName = "io.kubernetes.pod.name";
inline constexpr const char* kPodNamespace = "io.kubernetes.pod.namespace";
inline constexpr const char* kPodUid = "io.kubernetes.pod.uid";
inline constexpr const char* kContainerName = "io.kubernetes.container.name";

inline constexpr const char* kNamespace = "slurm";

// A label's value, "" when absent; labels are read back from the CRI, so a
// missing or mangled one must never throw.
template <class Map>
std::string value_of(const Map& labels, const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? std::string() : std::string(it->second);
}
// A numeric label (job, step, uid); 0 when absent or not a number.
uint32_t number(const std::string& text);
template <class Map>
uint32_t number_of(const Map& labels, const std::string& key) {
  return number(value_of(labels, key));
}
// The pod of all of a user's containers on the node.
std::string user_pod_name(uint32_t uid);

}  // namespace crisp::labels
