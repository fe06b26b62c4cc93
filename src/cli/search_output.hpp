// The output of `trainledger search` (search_output.cpp): one search's result as a table, JSON,
// CSV or SVG.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trainledger/layout_search.hpp"

namespace trainledger::cli {

// One search on one cluster size, and how long it took.
struct SearchRun {
  PlanInput input;
  SearchResult result;
  double seconds = 0;
  int world = 0;
};

// A duration as the table prints it: "850 ms", "2.31 s".
std::string ms(double s);

// A layout in words ("tp 2 · pp 1 · dp 8 · ZeRO-3 · ..."), in a few characters for a chart
// ("tp 2 dp 8 Z3 mb 2 full"), as JSON (its numbers, and its peak's band when `band` has one).
std::string layout_text(const Layout& l);
std::string layout_tag(const Layout& l);
nlohmann::json layout_json(const Layout& l, const Band& band);
// The layout as --set options for the shell, the cluster it was searched on included.
std::string sets_of(const Layout& l, const ClusterSpec& c);

struct SearchCliOptions;

// The search commands' option helpers (cmd_search.cpp): `s` split at `sep`, and a usage error
// (exit 2) located at `option`.
std::vector<std::string> split(const std::string& s, char sep);
[[noreturn]] void usage_error(const std::string& option, const std::string& message);

// `trainledger search` on a plan with an [rl] section (search_rl.cpp): placements, engine
// layouts and memory fractions with the training layouts; `fix` and `allow` hold the rl.*
// restrictions (the others are in `so.space`).
int run_rl_search(const SearchCliOptions& o, const PlanInput& base, const SearchOptions& so,
                  const std::vector<std::string>& fix, const std::vector<std::string>& allow,
                  std::ostream& out, std::ostream& err);

// `format`: table, json, csv or svg; `objective` as given on the command line.
void print_search(const SearchRun& run, const SearchOptions& so, const std::string& objective,
                  const std::string& format, std::ostream& out);

}  // namespace trainledger::cli
