// StepImage: the step's image, the "image" phase of a create: a registry image pulled (or
// found) with the user's credentials, or a squashfs file the user names, opened with their
// rights and mounted (or extracted as them); what its config says of Env, WorkingDir and
// entrypoint. Calls: ImageRequests, ImageStore, agent/host/ (squashfs), agent/images/.
#pragma once

#include <string>

#include "agent/steps/image_requests.h"
#include "agent/steps/step_plan.h"

namespace crisp {

class CriClient;
class ImageStore;

// The most crispd reads of a squashfs image's /etc/environment or /etc/rc.
inline constexpr size_t kImageConfigFileMax = 1u << 20;

class StepImage {
 public:
  // squashfs_any_owner: the kernel mounts squashfs images of any owner (crispd
  // --squashfs-any-owner), not only those root owns and alone may write (squashfs_mount.h).
  // sandbox_image: the runtime's sandbox image where its CRI status does not name it
  // (containerd 2.x; crispd --sandbox-image): a squashfs image's container is made from it.
  StepImage(ImageRequests& requests, ImageStore& store, CriClient& cri, bool squashfs_any_owner, std::string sandbox_image)
      : requests_(requests),
        store_(store),
        cri_(cri),
        squashfs_any_owner_(squashfs_any_owner),
        sandbox_image_(std::move(sandbox_image)) {}

  // The image the request names, into plan.
  Status resolve(const v1::CreateStepRequest& req, StepPlan& plan);
  // A squashfs image's container is made from the runtime's sandbox image: which, present.
  Status choose_cri_image(StepPlan& plan);

 private:
  Status pull(const v1::CreateStepRequest& req, StepPlan& plan);
  Status open_file(const v1::CreateStepRequest& req, StepPlan& plan);
  static void use_config(const std::string& image, const ImageConfig& config, StepPlan& plan);

  ImageRequests& requests_;
  ImageStore& store_;
  CriClient& cri_;
  const bool squashfs_any_owner_;
  const std::string sandbox_image_;
};

}  // namespace crisp
