#include <iostream>
#include <string>
#include <vector>

#include "app.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const int code = trainledger::cli::run(args, std::cout, std::cerr);
  // A report that could not be written (a full disk, a closed pipe) is a failure, not exit 0.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "trainledger: error: cannot write the output to stdout\n";
    return trainledger::cli::k_exit_runtime;
  }
  return code;
}
