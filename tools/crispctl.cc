// crispctl: the admin's view of crispd on this node.
#include <limits.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/client.h"
#include "common/slurm_ids.h"
#include "version.h"

namespace {

// Progress lines of a pull go to stderr, as a step's do.
int call(const std::string& socket, const crisp::v1::Request& req, int timeout_s, crisp::v1::Response& resp) {
  auto r = crisp::call_agent(socket, req, std::chrono::seconds(timeout_s), crisp::kIdleTimeout,
                             [](const std::string& line) { std::cerr << "crisp: " << line << std::endl; });
  if (!r) {
    std::cerr << "crisp: " << r.error() << "\n";
    return 1;
  }
  resp = std::move(*r);
  return 0;
}

std::string age(int64_t created_ns) {
  long s = static_cast<long>(time(nullptr) - created_ns / 1000000000);
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  return std::to_string(s / 3600) + "h";
}

// Every counter crispd keeps, named (crisp.proto is lite: no reflection).
std::vector<std::pair<const char*, uint64_t>> stat_values(const crisp::v1::StatsResponse& s) {
  return {{"pulls_started", s.pulls_started()},   {"pulls_merged", s.pulls_merged()},
          {"pulls_cached", s.pulls_cached()},     {"steps_created", s.steps_created()},
          {"steps_released", s.steps_released()}, {"swept", s.swept()},
          {"pulls_failed", s.pulls_failed()},     {"pulls_stalled", s.pulls_stalled()},
          {"prefetches", s.prefetches()},         {"prefetch_pulls", s.prefetch_pulls()},
          {"spares_made", s.spares_made()},       {"spares_claimed", s.spares_claimed()},
          {"spares_passed_over", s.spares_passed_over()}, {"spares_removed", s.spares_removed()},
          {"spares_ready", s.spares_ready()},     {"spares_making", s.spares_making()}};
}

// "name value" a line, or one JSON object.
void print_stats(const crisp::v1::StatsResponse& s, bool json) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, value] : stat_values(s)) {
    if (json) out[name] = value;
    else std::cout << name << " " << value << "\n";
  }
  if (json) std::cout << out.dump(2) << "\n";
}

std::string step_column(const crisp::v1::StepInfo& s) {
  if (s.spare()) return "spare";
  return s.name().empty() ? crisp::slurm::step_name(s.step_id()) : "name=" + s.name();
}

// One JSON array: every field crispd gives, ids whole.
void print_steps_json(const crisp::v1::ListResponse& list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : list.steps())
    out.push_back({{"job_id", s.job_id()},
                   {"step_id", s.step_id()},
                   {"step", s.spare() || !s.name().empty() ? "" : crisp::slurm::step_name(s.step_id())},
                   {"name", s.name()},
                   {"spare", s.spare()},
                   {"uid", s.uid()},
                   {"image", s.image()},
                   {"container_id", s.container_id()},
                   {"sandbox_id", s.sandbox_id()},
                   {"state", s.state()},
                   {"created_at_ns", s.created_at_ns()}});
  std::cout << out.dump(2) << "\n";
}

void print_steps(const crisp::v1::ListResponse& list, bool json) {
  if (json) return print_steps_json(list);
  std::printf("%-10s %-12s %-7s %-14s %-18s %-6s %s\n", "JOB", "STEP", "UID", "CONTAINER", "STATE", "AGE", "IMAGE");
  for (const auto& s : list.steps())
    std::printf("%-10s %-12s %-7u %-14s %-18s %-6s %s\n", s.job_id() ? std::to_string(s.job_id()).c_str() : "-",
                step_column(s).c_str(), s.uid(), s.container_id().substr(0, 13).c_str(), s.state().c_str(),
                age(s.created_at_ns()).c_str(), s.image().c_str());
}

// crispctl import IMAGE FILE.
int import_image(const std::string& socket, const std::string& image, std::string file, int timeout_s) {
  // crispd does not know our directory.
  char cwd[PATH_MAX];
  if (!file.empty() && file.front() != '/' && getcwd(cwd, sizeof cwd)) file = std::string(cwd) + "/" + file;
  crisp::v1::Request req;
  crisp::v1::Response resp;
  req.mutable_import()->set_image(image);
  req.mutable_import()->set_path(file);
  if (int rc = call(socket, req, timeout_s, resp)) return rc;
  std::cout << resp.import().image_ref() << " -> " << file << " (" << resp.import().bytes() / 1000000 << " MB) in "
            << resp.import().ms() << " ms\n";
  return 0;
}

// crispctl rm NAME, or rm --spares; uid_given: --uid was on the command line.
int remove(const std::string& socket, const std::string& name, uint32_t uid, bool uid_given, bool spares) {
  if (name.empty() == !spares) {
    std::cerr << "crispctl rm: name a container, or give --spares\n";
    return 2;
  }
  crisp::v1::Request req;
  crisp::v1::Response resp;
  req.mutable_remove_named()->set_name(name);
  req.mutable_remove_named()->set_uid(uid);
  req.mutable_remove_named()->set_spares(spares);
  req.mutable_remove_named()->set_all_users(getuid() == 0 && !uid_given);
  if (int rc = call(socket, req, 60, resp)) return rc;
  if (spares) std::cout << "removed " << resp.release().removed_containers() << " spare container(s)\n";
  else std::cout << "removed " << name << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"crispctl: inspect and drive crispd on this node"};
  std::string socket = crisp::kDefaultSocket;
  bool version = false;
  app.add_option("--socket", socket, "crispd's socket")->capture_default_str();
  app.add_flag("--version", version, "print the version and exit");
  app.require_subcommand(0, 1);

  auto* ps = app.add_subcommand("ps", "list the jobs, steps and containers on this node");
  uint32_t job = 0;
  ps->add_option("--job", job, "only this job");
  bool json = false;
  ps->add_flag("--json", json, "one JSON array, for scripts");
  auto* pull = app.add_subcommand("pull", "pull an image into the node's store");
  std::string image;
  int pull_timeout = 1800;
  pull->add_option("IMAGE", image, "image reference, as for --container-image")->required();
  pull->add_option("--timeout", pull_timeout, "seconds to wait")->capture_default_str();
  auto* import = app.add_subcommand("import", "write an image as a squashfs file of yours, as enroot import lays it out");
  std::string file;
  import->add_option("IMAGE", image, "image reference, as for --container-image")->required();
  import->add_option("FILE", file, "the squashfs file to write (replaced if it exists)")->required();
  import->add_option("--timeout", pull_timeout, "seconds to wait")->capture_default_str();
  auto* stats = app.add_subcommand("stats", "print crispd's counters");
  stats->add_flag("--json", json, "one JSON object, for scripts");
  auto* rm = app.add_subcommand("rm", "remove a named container (--container-name), or spare containers, from this node");
  std::string name;
  uint32_t rm_uid = getuid();
  bool rm_spares = false;
  rm->add_option("NAME", name, "the container's name");
  auto* uid_opt = rm->add_option("--uid", rm_uid, "whose container (root only; default: yours)");
  rm->add_flag("--spares", rm_spares, "the spare containers made ahead for your next steps (root: everyone's, or --uid's)");
  CLI11_PARSE(app, argc, argv);

  if (version) {
    std::cout << "crispctl " << CRISP_VERSION << "\n";
    return 0;
  }
  crisp::v1::Request req;
  crisp::v1::Response resp;
  if (*pull) {
    req.mutable_pull()->set_image(image);
    if (int rc = call(socket, req, pull_timeout, resp)) return rc;
    std::cout << resp.pull().image_ref() << " ready in " << resp.pull().ms() << " ms\n";
    return 0;
  }
  if (*import) return import_image(socket, image, file, pull_timeout);
  if (*rm) return remove(socket, name, rm_uid, uid_opt->count() > 0, rm_spares);
  if (*stats) {
    req.mutable_stats();
    if (int rc = call(socket, req, 10, resp)) return rc;
    print_stats(resp.stats(), json);
    return 0;
  }
  // ps is the default.
  req.mutable_list()->set_job_id(job);
  if (int rc = call(socket, req, 10, resp)) return rc;
  print_steps(resp.list(), json);
  return 0;
}
