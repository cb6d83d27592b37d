// ImageImporter: crispctl import, a registry image written as a
// squashfs file laid out as enroot's import makes one (its config in /etc),
// through the same pull and credentials as a step's, into a file of the caller's.
// The squashfs is made from a read-only view of the image's layers that
// containerd holds, mounted only in mksquashfs's own mount namespace: no
// container, and so no process of the user's, ever lives in what root reads.
// Calls: ImageRequests (the pull), containerd's snapshot service, agent/host/ (mksquashfs).
#pragma once

#include <algorithm>
#include <string>

#include "agent/host/squashfs_tools.h"
#include "agent/images/import_slots.h"
#include "agent/steps/image_requests.h"
#include "crisp.pb.h"

namespace crisp {

class SnapshotClient;

class ImageImporter {
 public:
  // snapshots: null (the fake CRI's tests): nothing is imported. stage_dir: HostDirs::imports.
  ImageImporter(ImageRequests& requests, SnapshotClient* snapshots, SquashfsBounds bounds, std::string stage_dir,
                size_t per_user, size_t per_node)
      : requests_(requests),
        snapshots_(snapshots),
        bounds_(bounds),
        stage_dir_(std::move(stage_dir)),
        slots_(std::max<size_t>(1, per_user), per_node) {}

  // image as a squashfs at path, the caller's file.
  Result<v1::ImportResponse> import(uint32_t uid, uint32_t gid, const std::string& image, const std::string& path,
                                    const PullWaiter& waiter = {});

 private:
  // The image's layers as a squashfs to out, enroot's files on top.
  Status squash_image(const ImageConfig& config, int out);

  ImageRequests& requests_;
  SnapshotClient* const snapshots_;
  const SquashfsBounds bounds_;
  const std::string stage_dir_;
  ImportSlots slots_;
};

}  // namespace crisp
