// Reading untrusted files (plan files and config.json come from pull requests in the CI-gate
// use): only regular files, of bounded size, inside the plan's folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace trainledger::config {

inline constexpr std::uintmax_t k_max_plan_bytes = 1u << 20;       // 1 MiB
inline constexpr std::uintmax_t k_max_hf_config_bytes = 4u << 20;  // 4 MiB
inline constexpr std::uintmax_t k_max_profile_bytes = 16u << 20;   // 16 MiB (raw sweeps)
inline constexpr std::uintmax_t k_max_log_bytes = 16u << 20;       // an nccl-tests log

// The bytes of `path` when it is a regular file of at most `limit` bytes; otherwise nothing,
// with the reason in `why` ("not a regular file", "larger than 1 MiB", "cannot read it").
std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t limit,
                                             std::string& why);

// Whether `path` lies inside the folder `root` once both are resolved (symbolic links and
// "..").
bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace trainledger::config
