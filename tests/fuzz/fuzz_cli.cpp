// libFuzzer target for the command line: the input is one argument per line (at most 16), run
// in-process. Any arguments must end in a documented exit code (0, 1, 2 or 4; 3 is only for a
// failed write, which an in-memory stream cannot have), with a message on stderr for 2 and
// never a printed NaN or infinity. Arguments that would read stdin ("-") or run calibrate probe
// are skipped.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
      if (args.size() > 16) return 0;
    } else if (current.size() < 256) {
      current += c;
    }
  }
  if (!current.empty()) args.push_back(current);
  // `calibrate probe` starts MPI or loads CUDA and times collectives: a measurement, not a
  // parser, and not something to start in the fuzzer's own process.
  for (const std::string& a : args)
    if (a == "-" || a == "probe") return 0;
  std::ostringstream out, err;
  const int code = trainledger::cli::run(args, out, err);
  if (code != 0 && code != 1 && code != 2 && code != 4) {
    std::cerr << "exit " << code << ": " << err.str() << "\n";
    std::abort();
  }
  if (code == 2 && err.str().empty()) std::abort();
  // A printed NaN or infinity is a bug unless an argument (a plan name the table echoes)
  // holds the text itself.
  std::string all_args;
  for (const std::string& a : args) all_args += a + "\n";
  for (const char* bad : {" nan", "-nan", " inf ", "NaN"})
    if (out.str().find(bad) != std::string::npos && all_args.find(bad + 1) == std::string::npos) {
      std::cerr << "prints \"" << bad << "\":\n" << out.str() << "\n";
      std::abort();
    }
  return 0;
}
