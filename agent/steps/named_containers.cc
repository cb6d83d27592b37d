#include "agent/steps/named_containers.h"

#include <algorithm>

#include "agent/cri/cri_client.h"
#include "agent/cri/labels.h"
#include "agent/images/image_store.h"
#include "agent/host/entrypoint.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {

Result<std::optional<cri::Container>> NamedContainers::find_named(const JobIdentity& scope, const std::string& name) {
  Labels sel = job_selector(scope.job_id);
  sel[labels::kUid] = std::to_string(scope.uid);
  sel[labels::kName] = name;
  auto found = cri_.list_containers(sel);
  if (!found) return found.take_error();
  std::optional<cri::Container> running;
  for (const cri::Container& c : *found) {
    if (c.state() == cri::CONTAINER_RUNNING && !running) {
      running = c;
      continue;
    }
    // Its holder died (containerd restarted, the node rebooted): only its name is left.
    log_warn("removing named container " + c.id().substr(0, 12) + " (" + name + "), which is not running");
    (void)containers_.remove({c});
  }
  return running;
}

Result<std::optional<v1::CreateStepResponse>> NamedContainers::join(const JobIdentity& scope,
                                                                      const v1::CreateStepRequest& req) {
  auto found = find_named(scope, req.name());
  if (found && !*found) found = find_step_container(req.uid(), req.name());
  if (!found) return found.take_error();
  if (!*found) {
    if (req.name_mode() == v1::NAME_EXEC)
      return fail("there is no container named " + req.name() + " on this node: --container-name=" + req.name() +
                  ":exec only joins one made by an earlier step");
    if (req.image().empty() && req.image_file().empty())
      return fail("there is no container named " + req.name() + " on this node: add --container-image to create it");
    return std::optional<v1::CreateStepResponse>();
  }
  if (req.name_mode() == v1::NAME_CREATE)
    return fail("a container named " + req.name() + " already exists on this node (--container-name=" + req.name() +
                ":create makes a new one only)");
  auto out = join_container(**found, req);
  if (!out) return out.take_error();
  return std::optional<v1::CreateStepResponse>(*out);
}

Result<v1::CreateStepResponse> NamedContainers::join_container(const cri::Container& c, const v1::CreateStepRequest& req) {
  auto pid = starter_.holder_pid(c.id());
  if (!pid) return fail("the container named " + req.name() + " cannot be joined: " + pid.error());
  auto started = process_start_time(*pid);
  if (!started) return fail("the container named " + req.name() + " cannot be joined: " + started.error());
  v1::CreateStepResponse out;
  out.set_attached(true);
  out.set_holder_pid(*pid);
  out.set_holder_start_time(*started);
  out.set_container_id(c.id());
  std::string image = labels::value_of(c.labels(), labels::kImage);
  out.set_image(image);
  // A squashfs image's Env is its container's, as an entrypoint's is; its WorkingDir a label.
  bool file = labels::value_of(c.labels(), labels::kImageFile) == "true";
  std::optional<std::vector<std::string>> env;
  if (file || c.labels().count(labels::kEntrypoint)) {
    auto read = holder_environment(*pid);
    if (file && !read) return fail("the container named " + req.name() + " cannot be joined: " + read.error());
    if (read) env = std::move(*read);
  }
  ImageConfig config;
  if (file) {
    config.working_dir = labels::value_of(c.labels(), labels::kImageWorkdir);
  } else {
    auto found = store_.config_of(image, {});
    if (!found) return found.take_error();
    config = *found;
  }
  for (const std::string& e : env.value_or(config.env)) out.add_image_env(e);
  out.set_image_workdir(config.working_dir);
  if (auto s = sessions_.enter(c.id(), *pid, req, out); !s) return s.take_error();
  return out;
}

// JOBID.STEPID: a running unnamed step's container, the user's own, as Pyxis names it.
Result<std::optional<cri::Container>> NamedContainers::find_step_container(uint32_t uid, const std::string& name) {
  std::vector<std::string> parts = split(name, '.');
  auto digits = [](const std::string& p) {
    return !p.empty() && p.size() <= 10 && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1])) return std::optional<cri::Container>();
  Labels sel = job_selector(labels::number(parts[0]));
  sel[labels::kStep] = std::to_string(labels::number(parts[1]));
  sel[labels::kUid] = std::to_string(uid);
  auto found = containers_.find(sel);
  if (!found) return found.take_error();
  for (const cri::Container& c : *found)
    if (c.state() == cri::CONTAINER_RUNNING && labels::value_of(c.labels(), labels::kName).empty() && sessions_.any_running(c.id()))
      return std::optional<cri::Container>(c);
  return std::optional<cri::Container>();
}

}  // namespace crisp
