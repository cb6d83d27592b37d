// What every fuzz target shares: the input as text, and a split of it into
// several strings (a key and a value, a registry and a file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crisp::fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input cut at NUL bytes, at most n parts (the last takes the rest).
inline std::vector<std::string> parts(const uint8_t* data, size_t size, size_t n) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && out.size() < n) out.emplace_back();
    else out.back().push_back(static_cast<char>(data[i]));
  }
  out.resize(n);
  return out;
}

}  // namespace crisp::fuzz
