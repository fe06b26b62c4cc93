// What the calibrate commands share: the profile's creation time, its atomic write and the
// summary printed after writing it.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "trainledger/calibrate.hpp"

namespace trainledger::cli {

// UTC now, or SOURCE_DATE_EPOCH when set (reproducible profiles).
std::string utc_now();
// Writes `text` to `path` atomically: a temporary file beside it, then a rename; nothing is
// left behind when either fails (throws std::runtime_error).
void write_atomically(const std::string& path, const std::string& text);
// A measurement file the calibrate commands read (memory stats, replica results): a regular
// file of at most 4 MiB and 100,000 JSON values, parsed; a parse error is located at its line
// and column with the text there, printable. `kind` names the file in diagnostics, `what`
// says what it should be; `text` receives the file's text (to locate later errors by key).
nlohmann::json read_json_file(const std::string& file, const char* kind, const char* what,
                              std::string& text);
// What a written profile holds, for the terminal.
void print_summary(std::ostream& out, const std::string& path, const calibrate::Profile& profile);

}  // namespace trainledger::cli
