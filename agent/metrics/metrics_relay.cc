// crisp-metrics-relay ADDRESS: the HTTP side of crispd's metrics, in a process of its
// own that crispd starts as nobody. Any local user may connect to a metrics port, so
// the HTTP parser (civetweb) never runs as root: for each GET /metrics this asks crispd,
// over descriptor 3, for the text prometheus-cpp made, and serves it. It exits when
// crispd closes descriptor 3.
#include <poll.h>

#include <CivetServer.h>

#include <chrono>
#include <iostream>
#include <mutex>

#include "common/deadline.h"
#include "common/wire.h"

namespace {

constexpr int kCrispd = 3;
constexpr std::chrono::seconds kAnswerTimeout{5};

class MetricsHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    auto text = ask_crispd();
    if (!text) {
      mg_printf(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                      "crispd did not answer: %s\n", text.error().c_str());
      return true;
    }
    mg_printf(conn,
              "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %zu\r\n"
              "Connection: close\r\n\r\n",
              text->size());
    mg_write(conn, text->data(), text->size());
    return true;
  }

 private:
  // One question at a time on the descriptor: civetweb's threads take turns.
  crisp::Result<std::string> ask_crispd() {
    std::lock_guard l(mu_);
    crisp::Deadline deadline(kAnswerTimeout);
    if (auto s = crisp::write_frame(kCrispd, "metrics", deadline); !s) return s.take_error();
    return crisp::read_frame(kCrispd, deadline);
  }
  std::mutex mu_;
};

// Returns when crispd closed its end (or exited).
void wait_for_crispd_to_go() {
  pollfd p{kCrispd, POLLRDHUP, 0};
  while (true) {
    int n = poll(&p, 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: crisp-metrics-relay ADDRESS (started by crispd, which holds its descriptor 3)\n";
    return 2;
  }
  // Two threads; a connection that sends no request is cut after 2 s; requests are one line and headers.
  std::vector<std::string> options = {"listening_ports",  argv[1], "num_threads", "2", "request_timeout_ms", "2000",
                                      "max_request_size", "8192"};
  MetricsHandler handler;  // outlives the server's threads
  try {
    CivetServer server(options);
    server.addHandler("/metrics", handler);
    wait_for_crispd_to_go();
  } catch (const std::exception& e) {
    // crispd's stderr, in its journald format.
    std::cerr << "<3>error: crisp-metrics-relay: cannot serve metrics on " << argv[1] << ": " << e.what()
              << " (is the port in use? crispd --metrics-address)\n";
    return 1;
  }
  return 0;
}
