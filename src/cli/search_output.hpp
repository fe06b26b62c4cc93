// The output of `trainledger search` (search_output.cpp): one search's result as a table, JSON,
// CSV or SVG.
#pragma once

#include <iosfwd>
#include <string>

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

// `format`: table, json, csv or svg; `objective` as given on the command line.
void print_search(const SearchRun& run, const SearchOptions& so, const std::string& objective,
                  const std::string& format, std::ostream& out);

}  // namespace trainledger::cli
