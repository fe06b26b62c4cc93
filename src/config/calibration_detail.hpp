// What the nccl-tests reader and the profile builder share (docs/calibration.md): nccl-tests'
// collective names, its bus factors, the planner's ring steps, located errors.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <string>

#include "trainledger/calibrate.hpp"
#include "trainledger/config.hpp"

namespace trainledger::calibrate::detail {

// A located error in a log (file:line when the line is known).
[[noreturn]] inline void fail(const std::string& file, int line, const std::string& message) {
  throw config::ConfigError(
      {config::Diagnostic{config::Origin{file, line, line > 0 ? 1 : 0, "log"}, message}});
}

struct Named {
  const char* name;  // nccl-tests' binary stem
  CollKind kind;
};
inline constexpr Named k_collectives[] = {{"all_reduce", CollKind::all_reduce},
                                          {"all_gather", CollKind::all_gather},
                                          {"reduce_scatter", CollKind::reduce_scatter},
                                          {"alltoall", CollKind::all_to_all},
                                          {"sendrecv", CollKind::send_recv}};

inline std::optional<CollKind> collective_named(const std::string& name) {
  std::string n;
  for (char c : name) n += c == '-' ? '_' : static_cast<char>(std::tolower(c));
  if (n == "all_to_all") n = "alltoall";
  if (n == "send_recv") n = "sendrecv";
  for (const Named& c : k_collectives)
    if (n == c.name) return c.kind;
  return std::nullopt;
}

inline std::string nccl_name(CollKind k) {
  for (const Named& c : k_collectives)
    if (c.kind == k) return c.name;
  return "all_reduce";
}

// nccl-tests' bus factor (busbw = algbw × factor, doc/PERFORMANCE.md) and the ring's latency
// steps of one call are the planner's own (src/core/collectives.cpp).
using trainledger::bus_factor;
inline double ring_steps(CollKind k, int n) { return call_steps(k, n); }

}  // namespace trainledger::calibrate::detail
