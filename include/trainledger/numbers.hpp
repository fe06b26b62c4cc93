// The numbers-only evaluation of a plan: the same formulas as compute_plan, evaluated as plain
// numbers with no formula text, no terms and no allocation once the result's storage is warm.
// For searches and what-if questions that evaluate many candidates; its bytes and seconds equal
// compute_plan's exactly.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainledger/items.hpp"
#include "trainledger/ledger.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

// An item of the numbers-only evaluation: its id and value (base units).
struct NumItem {
  ItemId item = ItemId::params;
  double value = 0;
};

// A list of numbers-only items; ids are unique within a list, so it never holds more than
// k_item_count.
class NumItems {
 public:
  void push_back(const NumItem& i) {
    if (m_size < k_item_count) m_items[m_size++] = i;
  }
  void clear() { m_size = 0; }
  const NumItem* begin() const { return m_items.data(); }
  const NumItem* end() const { return m_items.data() + m_size; }
  int size() const { return m_size; }
  bool empty() const { return m_size == 0; }

 private:
  std::array<NumItem, k_item_count> m_items{};
  int m_size = 0;
};

// Collectives (docs/formulas.md#collectives).
enum class CollKind : std::uint8_t {
  all_reduce,
  tree_all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  send_recv
};
std::string_view to_string(CollKind k);
// The algorithm NCCL runs a call with (src/graph/tuning.cc): a ring, a tree (all-reduce), PAT
// (all-gather over one rank per node, NCCL 2.23 and later), or point-to-point transfers (send/recv
// and all-to-all, outside the tuner).
enum class Algo : std::uint8_t { ring, tree, pat, p2p };
std::string_view to_string(Algo a);
// A call's name in the reports: the collective, and the algorithm where it is not a ring
// ("all-reduce (tree)", "all-gather (PAT)").
std::string call_name(CollKind k, Algo a);
// Bytes each rank sends per byte of the message (nccl-tests' bus factor: 2(n−1)/n for
// all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all, 1 for send/recv), and
// the ring's latency steps of one call (docs/formulas.md#collectives).
double bus_factor(CollKind k, int n);
double call_steps(CollKind k, int n);
// NCCL's LL protocol carries 4 bytes of data in each 8-byte line (the other 4 are its flag):
// half the bus bandwidth (src/graph/tuning.cc, ncclTopoTuneModel: Ring + LL busBw × 0.5).
inline constexpr double k_ll_bandwidth_share = 0.5;

// The parallel dimensions that communicate.
enum class Dim : std::uint8_t { dp, tp, pp, cp, ep };
inline constexpr int k_dim_count = 5;
std::string_view to_string(Dim d);

// When a call runs, for what compute can hide it: during every micro-batch's forward (ZeRO-3's
// forward gathers) or backward (its backward gathers), during the backward of the micro-batches
// that synchronize gradients (buckets, reduce-scatters), or after the optimizer step (ZeRO-1/2's
// parameter all-gather: never hidden).
enum class CommPhase : std::uint8_t { forward, backward, backward_sync, after_step };

// One call pattern of a dimension's traffic.
struct CollCall {
  CollKind kind = CollKind::all_reduce;
  int group_size = 1;
  double message_bytes = 0;  // S: the full tensor of one call
  double calls_per_step = 0;
  bool inter_node = false;
  double time_s = 0;  // all calls of the step
  CommPhase phase = CommPhase::backward_sync;
  Algo algo = Algo::ring;
};

// The traffic of one parallel dimension per GPU per optimizer step.
struct CommDim {
  Dim dim = Dim::dp;
  bool present = false;  // the dimension communicates in this plan
  double bytes = 0;      // sent per GPU per step
  double time_s = 0;     // all calls (0 when a bandwidth is missing: timed = false)
  bool timed = true;
  std::array<CollCall, 8> calls{};
  int n_calls = 0;
  // Time per step by phase (CommPhase), and the units each pass's traffic comes in (buckets
  // or gathered layers): each unit's traffic overlaps the compute of the unit before it.
  double forward_s = 0;
  double backward_s = 0;
  double sync_s = 0;
  double tail_s = 0;
  double units = 1;
};

struct CommResults {
  std::array<CommDim, k_dim_count> dims{};
  const CommDim& operator[](Dim d) const { return dims[static_cast<int>(d)]; }
  CommDim& operator[](Dim d) { return dims[static_cast<int>(d)]; }
};

struct StageNumbers {
  int stage = 0;
  int layers = 0;
  Phase peak_phase = Phase::backward;
  std::array<double, 5> phase_bytes{};  // in Phase order
  double peak_bytes = 0;
  NumItems items;  // the ledger at the peak phase
};

struct PlanNumbers {
  Derived derived;
  std::vector<int> stage_layers;     // layers per pipeline stage
  std::vector<StageNumbers> stages;  // every stage, or those that can hold the peak (PlanScope)
  int worst_stage = 0;               // the stage number
  int worst_index = 0;               // its place in `stages`
  NumItems offloaded;                // the worst stage's state kept in host memory
  Verdict verdict;
  NumItems host;
  double host_peak_bytes = 0;
  CommResults comm;
  NumItems communication;  // comm.* bytes, as the report's items
  NumItems time;
  NumItems reliability;
};

// Evaluates `input` into `out` (whose storage is reused: no allocation once it holds as many
// stages). `input` must be valid (check_rules returns nothing).
void evaluate(const PlanInput& input, PlanNumbers& out, const PlanScope& scope = {});

// The time side alone, after `evaluate(input, out, scope)` with scope.time false on the same
// input (or on one that differs only in what memory does not depend on: the rank order). A
// search times only the layouts that fit.
void evaluate_time(const PlanInput& input, PlanNumbers& out, const PlanScope& scope = {});

}  // namespace trainledger
