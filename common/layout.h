// Paths that crispd and the plugin must agree on.
#pragma once

namespace crisp {

// crispd's socket, unless plugstack.conf's socket= or crispd's --socket say otherwise.
inline constexpr const char* kDefaultSocket = "/run/crisp/crispd.sock";

// Where crisp-holder appears inside every container (bind-mounted read-only).
inline constexpr const char* kHolderTarget = "/.crisp/holder";

// --container-unshare's namespaces, as bits: the protocol's, and crisp-holder's session mode's.
enum UnshareBits : unsigned { kUnshareNet = 1, kUnshareIpc = 2, kUnshareUts = 4 };

}  // namespace crisp
