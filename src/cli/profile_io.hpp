// What the calibrate commands share: the profile's creation time, its atomic write and the
// summary printed after writing it.
#pragma once

#include <iosfwd>
#include <string>

#include "trainledger/calibrate.hpp"

namespace trainledger::cli {

// UTC now, or SOURCE_DATE_EPOCH when set (reproducible profiles).
std::string utc_now();
// Writes `text` to `path` atomically: a temporary file beside it, then a rename; nothing is
// left behind when either fails (throws std::runtime_error).
void write_atomically(const std::string& path, const std::string& text);
// What a written profile holds, for the terminal.
void print_summary(std::ostream& out, const std::string& path, const calibrate::Profile& profile);

}  // namespace trainledger::cli
