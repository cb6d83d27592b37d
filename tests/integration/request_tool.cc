// Test helper: sends one raw agent request, as a caller of any uid would, and
// prints crispd's answer. Used to show what crispd refuses.
#include <unistd.h>

#include <cstring>
#include <iostream>

#include "common/client.h"

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[2], "create") != 0 && std::strcmp(argv[2], "release-job") != 0)) {
    std::cerr << "usage: request_tool SOCKET create|release-job JOB [IMAGE]\n";
    return 2;
  }
  crisp::v1::Request req;
  uint32_t job = argc > 3 ? static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 1;
  if (std::strcmp(argv[2], "create") == 0) {
    auto* c = req.mutable_create_step();
    c->set_job_id(job);
    c->set_uid(0);  // asks for a root container: exactly what must be refused
    c->set_image(argc > 4 ? argv[4] : "busybox");
    c->set_stepd_pid(getpid());
  } else {
    req.mutable_release_job()->set_job_id(job);
  }
  auto r = crisp::call_agent(argv[1], req, std::chrono::seconds(30));
  if (!r) {
    std::cout << "crisp: " << r.error() << "\n";
    return 1;
  }
  std::cout << "accepted\n";
  return 0;
}
