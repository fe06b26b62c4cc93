// Reading untrusted files (plan files and config.json come from pull requests in the CI-gate
// use): only regular files, of bounded size, whose real location lies inside the folder they
// were named from; and writing only over regular files.
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

// The bytes of `path` when it is a regular file of at most `limit` bytes and the file actually
// opened (every symbolic link and ".." resolved, at every level) lies inside `root`; otherwise
// nothing, with the reason in `why` ("not a regular file", "larger than 1 MiB", "cannot read
// it", "out of its folder, ..."). A name that leads out of the folder gets that one answer
// whether or not anything exists there. An empty `root` is the folder `path` is named in: a
// file given on the command line may not lead out of its own folder either. FIFOs, devices
// and sockets are never opened for reading (no hang, no side effect of opening a device).
std::optional<std::string> read_file_inside(const std::filesystem::path& path,
                                            const std::filesystem::path& root, std::uintmax_t limit,
                                            std::string& why);

// read_file_inside(path, "" (its own folder), limit, why).
std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t limit,
                                             std::string& why);

// Whether `path` lies inside the folder `root` once both are resolved (symbolic links and
// "..").
bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& root);

// Why `path` may not be written (replaced by a rename): it exists and is not a regular file
// (a device, a FIFO, a socket, a directory, a symbolic link: lstat, not followed). Empty when
// it may be written.
std::string unwritable_reason(const std::string& path);

// Writes `text` to `path` atomically: a new temporary file beside it (O_EXCL, not following
// links), flushed, then renamed over `path`. Refuses (throws std::runtime_error, nothing
// replaced, nothing left behind) when `path` exists and is not a regular file, or when any
// step fails.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trainledger::config
