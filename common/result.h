// A value or an error: a kind for code to act on and one line for the user.
// C++20 has no std::expected yet.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace crisp {

// What went wrong, for control flow; the message is only ever shown.
enum class ErrorKind {
  kFailed,       // anything not named below
  kClosed,       // the peer closed before a frame began
  kTimedOut,     // a deadline passed
  kUnreachable,  // nothing listens where crispd (or containerd) should
  kNotFound,     // a path named does not exist, or a container the runtime no longer has
  kUnsupported,  // this node's kernel, filesystem or runtime cannot do it
  kCancelled,    // the step or client it was for went away first
  kRefused,      // what a user asked for, or did, is not allowed (or over a limit)
};

struct Error {
  ErrorKind kind = ErrorKind::kFailed;
  std::string message;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  const std::string& error() const { return std::get<Error>(v_).message; }
  ErrorKind error_kind() const { return std::get<Error>(v_).kind; }
  // The error, to pass on as it is: `return r.take_error();`.
  Error take_error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;

inline Error fail(std::string message) { return Error{ErrorKind::kFailed, std::move(message)}; }
inline Error fail(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }

}  // namespace crisp
