#include "agent/cri/spec_builder.h"

#include <nlohmann/json.hpp>

#include "agent/cri/labels.h"
#include "common/slurm_ids.h"

namespace crisp {
namespace {

void host_namespaces(cri::NamespaceOption* ns) {
  // NCCL, MPI and RDMA must see the node as bare metal does.
  ns->set_network(cri::NODE);
  ns->set_pid(cri::NODE);
  ns->set_ipc(cri::NODE);
}

Labels job_labels(const JobIdentity& job, const NodeSettings& node) {
  return {{labels::kManaged, "true"},
          {labels::kJob, std::to_string(job.job_id)},
          {labels::kUid, std::to_string(job.uid)},
          {labels::kUser, job.user},
          {labels::kNode, node.node_name}};
}

cri::MountPropagation propagation_of(const std::string& p) {
  if (p == "slave" || p == "rslave") return cri::PROPAGATION_HOST_TO_CONTAINER;
  if (p == "shared" || p == "rshared") return cri::PROPAGATION_BIDIRECTIONAL;
  return cri::PROPAGATION_PRIVATE;
}

void add_mount(cri::ContainerConfig& c, const std::string& host, const std::string& target, bool ro,
               cri::MountPropagation prop = cri::PROPAGATION_PRIVATE) {
  cri::Mount* m = c.add_mounts();
  m->set_host_path(host);
  m->set_container_path(target);
  m->set_readonly(ro);
  m->set_propagation(prop);
}

std::vector<std::string> strings_at(const nlohmann::json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

Result<nlohmann::json> info_json(const std::map<std::string, std::string>& info, const char* key = "info") {
  auto it = info.find(key);
  if (it == info.end()) return fail("the runtime returned no verbose info");
  nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("the runtime's verbose info is not a JSON object");
  return j;
}

}  // namespace

cri::PodSandboxConfig build_user_sandbox_config(uint32_t uid, const std::string& user, const NodeSettings& node) {
  cri::PodSandboxConfig c;
  auto* md = c.mutable_metadata();
  md->set_name(labels::user_pod_name(uid));
  md->set_namespace_(labels::kNamespace);
  md->set_uid("crisp-" + node.node_name + "-" + labels::user_pod_name(uid));
  md->set_attempt(0);
  // Left empty on purpose: runc refuses to set a hostname in the host UTS namespace.
  c.set_hostname("");
  // containerd logs a container only when both this and its log_path are set.
  c.set_log_directory(kLogDirectory);
  // Job 0: the sandbox outlives every job.
  Labels l = job_labels({0, uid, user}, node);
  l[labels::kPodName] = md->name();
  l[labels::kPodNamespace] = md->namespace_();
  l[labels::kPodUid] = md->uid();
  c.mutable_labels()->insert(l.begin(), l.end());
  host_namespaces(c.mutable_linux()->mutable_security_context()->mutable_namespace_options());
  return c;
}

std::string container_name(const StepContainerInput& in) {
  // Unique in the user's sandbox, which holds all of their jobs (job 0: global scope).
  if (!in.spare.empty()) return "spare-" + in.spare;
  return "job-" + std::to_string(in.job.job_id) + "-" +
         (in.name.empty() ? "step-" + slurm::step_name(in.step_id) : "named-" + in.name);
}

cri::ContainerConfig build_step_container(const StepContainerInput& in, const NodeSettings& node) {
  cri::ContainerConfig c;
  c.mutable_metadata()->set_name(container_name(in));
  c.mutable_image()->set_image(in.cri_image.empty() ? in.image : in.cri_image);
  // The holder is the only process: it keeps the namespaces alive and exits
  // with slurmstepd (a named container's, only when stopped).
  std::vector<std::string> argv = in.entrypoint;
  argv.push_back(kHolderTarget);
  argv.push_back(std::to_string(in.name.empty() && in.spare.empty() ? in.stepd_pid : 0));
  c.add_command(argv.front());
  for (size_t i = 1; i < argv.size(); ++i) c.add_args(argv[i]);
  c.set_working_dir("/");
  for (const std::string& kv : in.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    cri::KeyValue* e = c.add_envs();
    e->set_key(kv.substr(0, eq));
    e->set_value(kv.substr(eq + 1));
  }
  c.set_log_path(in.log_path);

  Labels l = job_labels(in.job, node);
  if (!in.spare.empty()) l[labels::kSpare] = "true";
  else if (in.name.empty()) l[labels::kStep] = std::to_string(in.step_id);
  else l[labels::kName] = in.name;
  if (!in.entrypoint.empty()) l[labels::kEntrypoint] = "true";
  if (!in.tmpfs_root.empty()) l[labels::kTmpfs] = in.tmpfs_root;
  if (!in.hca_view.empty()) l[labels::kHcaView] = in.hca_view;
  l[labels::kImage] = in.image;
  if (!in.cri_image.empty()) {
    l[labels::kImageFile] = "true";
    l[labels::kImageWorkdir] = in.image_workdir;
  }
  l[labels::kPodName] = labels::user_pod_name(in.job.uid);
  l[labels::kPodNamespace] = labels::kNamespace;
  l[labels::kContainerName] = container_name(in);
  c.mutable_labels()->insert(l.begin(), l.end());

  add_mount(c, node.holder_path, kHolderTarget, true);
  for (const v1::BindMount& m : in.mounts)
    add_mount(c, m.source(), m.target(), m.readonly(), propagation_of(m.propagation()));
  for (const auto& [host, target] : in.tmpfs) add_mount(c, host, target, false);
  for (const cri::Device& d : in.devices) *c.add_devices() = d;
  if (!in.hca_view.empty()) add_mount(c, in.hca_view, "/sys/class/infiniband", true);
  auto mount_workdir_at = [&](const std::string& target) {
    for (const v1::BindMount& m : in.mounts)
      if (m.target() == target) return;  // the user's own mount wins
    add_mount(c, in.workdir_source, target, false);
  };
  if (!in.workdir.empty()) {
    mount_workdir_at(in.workdir);
    if (!in.workdir_alias.empty() && in.workdir_alias != in.workdir) mount_workdir_at(in.workdir_alias);
  }
  // srun --pty's terminal is a pty of the node's devpts: the container shows
  // that one (as the node's PID namespace already shows its processes), so
  // `tty` names it. (Its ptmx is 0000: crispd makes /dev/ptmx the node's
  // device, see user_rootfs.h, for programs inside to open new ptys there.)
  add_mount(c, kHostDevpts, "/dev/pts", false);

  auto* sc = c.mutable_linux()->mutable_security_context();
  host_namespaces(sc->mutable_namespace_options());
  sc->mutable_run_as_user()->set_value(in.job.uid);
  sc->mutable_run_as_group()->set_value(in.gid);
  for (uint32_t g : in.groups) sc->add_supplemental_groups(g);
  sc->set_no_new_privs(true);
  sc->set_readonly_rootfs(in.readonly_rootfs);
  sc->mutable_capabilities()->add_drop_capabilities("ALL");
  return c;
}

Result<ImageConfig> parse_image_info(const std::map<std::string, std::string>& info) {
  auto j = info_json(info);
  if (!j) return j.take_error();
  const nlohmann::json* config = nullptr;
  if (auto spec = j->find("imageSpec"); spec != j->end() && spec->is_object())
    if (auto cfg = spec->find("config"); cfg != spec->end() && cfg->is_object()) config = &*cfg;
  ImageConfig out;
  if (auto chain = j->find("chainID"); chain != j->end() && chain->is_string()) out.chain_id = *chain;
  if (!config) return out;  // an image may carry no config at all
  out.env = strings_at(*config, "Env");
  out.entrypoint = strings_at(*config, "Entrypoint");
  out.cmd = strings_at(*config, "Cmd");
  if (auto wd = config->find("WorkingDir"); wd != config->end() && wd->is_string()) out.working_dir = *wd;
  if (auto v = config->find("Volumes"); v != config->end() && v->is_object())
    for (const auto& [path, _] : v->items()) out.volumes.push_back(path);
  if (auto l = config->find("Labels"); l != config->end() && l->is_object())
    for (const auto& [key, value] : l->items())
      if (value.is_string()) out.labels.emplace_back(key, value.get<std::string>());
  return out;
}

Result<int> parse_container_pid(const std::map<std::string, std::string>& info) {
  auto j = info_json(info);
  if (!j) return j.take_error();
  auto pid = j->find("pid");
  if (pid == j->end() || !pid->is_number_integer() || pid->get<int>() <= 0)
    return fail("the runtime reported no pid for the container");
  return pid->get<int>();
}

Result<std::string> parse_sandbox_image(const std::map<std::string, std::string>& info) {
  auto j = info_json(info, "config");
  if (!j) return j.take_error();
  auto image = j->find("sandboxImage");
  if (image == j->end() || !image->is_string() || image->get<std::string>().empty())
    return fail("the runtime's configuration names no sandbox image");
  return image->get<std::string>();
}

}  // namespace crisp
