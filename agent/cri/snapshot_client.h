// containerd's snapshot service, read beside CRI: the mounts of a container's
// snapshot as containerd holds them (never as the container's processes, which
// are the user's, describe them in /proc/PID/mountinfo), and read-only views of
// an image's layers (crispctl import) that no process of anyone's lives in.
// Same socket as CRI, namespace k8s.io.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/snapshot_mount.h"
#include "snapshots.grpc.pb.h"

namespace crisp {

class SnapshotClient;

// A read-only view of an image's layers, held by a lease that expires on its
// own (a crispd that dies leaves containerd nothing to keep); removed when it goes.
class SnapshotView {
 public:
  SnapshotView(SnapshotView&& o) noexcept;
  SnapshotView& operator=(SnapshotView&&) = delete;
  ~SnapshotView();
  const std::vector<SnapshotMount>& mounts() const { return mounts_; }

 private:
  friend class SnapshotClient;
  SnapshotView(SnapshotClient* client, std::string key, std::vector<SnapshotMount> mounts)
      : client_(client), key_(std::move(key)), mounts_(std::move(mounts)) {}
  SnapshotClient* client_;
  std::string key_;  // the view's, and its lease's id
  std::vector<SnapshotMount> mounts_;
};

class SnapshotClient {
 public:
  // channel: CRI's own (CriClient::channel); snapshotter: CRI's ("overlayfs").
  SnapshotClient(std::shared_ptr<grpc::Channel> channel, std::string snapshotter, std::chrono::seconds call_timeout);
  ~SnapshotClient();
  // The mounts of the snapshot named key (a CRI container's id names its root's).
  Result<std::vector<SnapshotMount>> mounts(const std::string& key);
  // A view of the committed snapshot parent (an image's chain id), kept at most lifetime.
  Result<SnapshotView> view(const std::string& parent, std::chrono::seconds lifetime);

 private:
  friend class SnapshotView;
  void drop(const std::string& key);
  class Leases;
  std::unique_ptr<containerd::services::snapshots::v1::Snapshots::Stub> stub_;
  std::unique_ptr<Leases> leases_;
  std::string snapshotter_;
  std::chrono::seconds call_timeout_;
};

}  // namespace crisp
