#include <cerrno>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "app.hpp"

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`| head`) makes the write fail, which is reported
  // below (exit 3), instead of killing the program by SIGPIPE mid-report.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const int code = trainledger::cli::run(args, std::cout, std::cerr);
  // A report that could not be written (a full disk, a closed pipe) is a failure, not exit 0.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << (errno == EPIPE ? "trainledger: error: the output's reader closed the pipe "
                                   "before the report was written\n"
                                 : "trainledger: error: cannot write the output to stdout\n");
    return trainledger::cli::k_exit_runtime;
  }
  return code;
}
