// ImageRequests: every way an image reaches the node, behind one credential builder: a
// step's pull (with its user's registry credentials, waited for only while the step
// lives), the job prolog's prefetch, crispctl pull (the node's credentials) and the pull
// for crispctl import (the caller's). Calls: ImageStore, agent/images/credentials.h,
// the step liveness question it is given, Metrics.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "agent/images/credentials.h"
#include "agent/cri/spec_builder.h"
#include "agent/images/pull_waiter.h"
#include "agent/slurm/slurm_jobs.h"
#include "common/image_ref.h"
#include "crisp.pb.h"

namespace crisp {

class ImageStore;
class Metrics;

// Whether slurmctld still runs a step (slurm_jobs.h's slurm_step_liveness), asked while its
// image is pulled; unset: not asked.
using StepLivenessQuery = std::function<JobLiveness(uint32_t job, uint32_t step)>;

class ImageRequests {
 public:
  // node_auth_file: the node's Docker-format credentials; empty: none.
  ImageRequests(ImageStore& store, std::string node_auth_file, StepLivenessQuery step_liveness, Metrics& metrics)
      : store_(store),
        node_auth_file_(std::move(node_auth_file)),
        step_liveness_(std::move(step_liveness)),
        metrics_(metrics) {}

  // The step's image, pulled with its user's credentials (user: none without a home) if the
  // node lacks it. A pull is waited for only while the step is alive: scancel or Ctrl-C ends it.
  Result<ImageConfig> for_step(const v1::CreateStepRequest& req, const ImageRef& ref, std::optional<UserFiles> user,
                               const PullWaiter& request);
  // The job prolog's: start pulling the image with the user's credentials, answered at once.
  Result<v1::PrefetchResponse> prefetch(const v1::PrefetchRequest& req);
  // crispctl pull (root's): with the node's credentials alone.
  Result<v1::PullResponse> pull(const v1::PullRequest& req, const PullWaiter& waiter);
  // crispctl import's: with the caller's credentials (user: none for root).
  Result<ImageConfig> for_import(const ImageRef& ref, std::optional<UserFiles> user, const PullWaiter& waiter);

 private:
  std::function<FoundCredential()> credentials(std::optional<UserFiles> user, const std::string& registry,
                                           const std::string& login) const;
  // The request's own stop (its client left) and, every few seconds, slurmctld's word on the step.
  PullWaiter step_waiter(const v1::CreateStepRequest& req, const PullWaiter& request) const;
  static constexpr std::chrono::seconds kLivenessEvery{3};

  ImageStore& store_;
  const std::string node_auth_file_;
  const StepLivenessQuery step_liveness_;
  Metrics& metrics_;
};

}  // namespace crisp
