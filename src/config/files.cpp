#include "files.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <system_error>

namespace trainledger::config {

std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t limit,
                                             std::string& why) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    why = "cannot read it";
    return std::nullopt;
  }
  if (!std::filesystem::is_regular_file(st)) {
    why = "not a regular file";
    return std::nullopt;
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    why = "cannot read it";
    return std::nullopt;
  }
  if (size > limit) {
    why = fmt::format("larger than {} MiB", limit >> 20);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot read it";
    return std::nullopt;
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  // Read at most `limit` bytes even if the file grew since it was measured.
  std::istreambuf_iterator<char> it(in), end;
  for (std::uintmax_t n = 0; it != end && n <= limit; ++it, ++n) text.push_back(*it);
  if (text.size() > limit) {
    why = fmt::format("larger than {} MiB", limit >> 20);
    return std::nullopt;
  }
  return text;
}

bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& root) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  const std::filesystem::path r = std::filesystem::weakly_canonical(root, ec);
  if (ec) return false;
  auto pi = p.begin();
  for (auto ri = r.begin(); ri != r.end(); ++ri, ++pi) {
    if (ri->empty()) continue;  // a trailing separator
    if (pi == p.end() || *pi != *ri) return false;
  }
  return true;
}

}  // namespace trainledger::config
