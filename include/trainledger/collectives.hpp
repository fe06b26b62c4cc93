// Collective communication: bytes per GPU and time (docs/formulas.md#collectives).
#pragma once

#include <string>

#include "trainledger/expr.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

enum class CollKind {
  all_reduce,
  tree_all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  send_recv
};
std::string_view to_string(CollKind k);

// The link a process group uses, by where its ranks are.
struct Link {
  bool inter_node = false;
  double bandwidth = 0;  // achievable busbw per GPU, bytes/s
  double latency = 0;    // s per step
  std::string name() const { return inter_node ? "inter-node" : "intra-node"; }
};

// A process group of the layout: its size and the link between its ranks.
struct Group {
  std::string name;  // "tp", "dp", ...
  int size = 1;
  int stride = 1;  // rank distance between members (product of the inner dimensions)
  Link link;
};

// The group of a parallel dimension under the plan's placement order.
Group group_of(const PlanInput& in, std::string_view dim, int size);

// Bytes one GPU sends for one call on a message of S bytes (the full tensor):
// all-reduce 2(n−1)/n·S, all-gather and reduce-scatter (n−1)/n·S, all-to-all (n−1)/n·S,
// send/recv S.
Expr call_volume(CollKind k, int n, const Expr& message_bytes);
// Steps of latency per call: ring all-reduce 2(n−1), tree 2·⌈log2 n⌉, all-gather,
// reduce-scatter and all-to-all n−1, send/recv 1.
double call_steps(CollKind k, int n);
// Time of `calls` calls: calls × (α·steps + volume / B), B the group's busbw.
Expr calls_time(CollKind k, const Group& g, const Expr& message_bytes, const Expr& calls);

// An nccl-tests measurement read the nccl-tests way: algbw = S / t, busbw = algbw × the
// collective's factor (2(n−1)/n for all-reduce, (n−1)/n for all-gather and reduce-scatter),
// and the bytes each rank sends (nccl-tests doc/PERFORMANCE.md).
struct BusReading {
  double algbw = 0;  // bytes/s
  double busbw = 0;  // bytes/s
  double per_rank_bytes = 0;
};
BusReading nccl_reading(CollKind k, int n, double message_bytes, double seconds);

}  // namespace trainledger
