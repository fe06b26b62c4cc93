// YAML configs read as flat key → scalar maps (the NeMo-RL and TRL importers): yaml-cpp after a
// structural check, every scalar under its dotted path with the line and column it is written
// at. The files come from pull requests: nesting, node count and aliases are bounded before and
// while yaml-cpp reads them. Built only with yaml-cpp (TRAINLEDGER_HAVE_YAML).
#pragma once

#include <map>
#include <string>

#include "import_sink.hpp"

namespace trainledger::config::importing {

// A scalar of a YAML config with where it is written; a list is kept whole as its flow text
// ("[a, b]"), an empty mapping as an empty value.
struct Leaf {
  std::string value;
  std::string file;
  int line = 0;
  int column = 0;
  bool null = false;
};
using Flat = std::map<std::string, Leaf>;

// Reads `text` (the file at `path`) into `out`. On a problem (too deep, a NUL byte, not YAML,
// too many nodes, not a mapping) reports it to the sink at its line and returns false;
// `expected` names what the mapping should hold ("NeMo-RL's keys").
bool read_flat_yaml(const std::string& text, const std::string& path, Sink& s,
                    const std::string& expected, Flat& out);

inline Origin origin_of(const Leaf& l) { return Origin{l.file, l.line, l.column, "import"}; }

}  // namespace trainledger::config::importing
