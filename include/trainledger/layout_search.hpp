// Layout search (docs/cli.md#search): every valid way to lay a plan out on a cluster, judged by
// the numbers-only evaluation (trainledger/numbers.hpp), with the same rules as a plan file.
// Memory is evaluated first and a layout that does not fit with the required headroom is
// dropped before its time side is computed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainledger/plan.hpp"

namespace trainledger {

// What a layout may vary. An empty list lets the search choose every value it can; a list
// holds the values allowed (--allow), one value fixes it (--fix).
struct SearchSpace {
  std::vector<int> tp, pp, cp, ep, zero, micro_batch, virtual_stages;
  // HSDP: shard groups of this many dp × cp ranks (0: the whole group); by default the whole
  // group and groups spanning 1, 2, 4 or 8 nodes.
  std::vector<int> shard;
  // Rank order: 0 the plan file's default (tp, cp, dp, pp), 1 pipeline stages inside the data
  // parallel groups (tp, cp, pp, dp).
  std::vector<int> placement;
  std::vector<int> sequence_parallel;  // 0, 1
  std::vector<int> overlap_tp;         // 0, 1: TP communication behind the GEMMs (tp > 1)
  // Optimizer state (ZeRO >= 1) and parameters (ZeRO-3) on the host. Empty: the plan's own,
  // and every value when no layout fits with it (offload never shortens a step; it fits what
  // the GPUs alone cannot).
  std::vector<Offload> offload;
  std::vector<Recompute> recompute;
  std::vector<Schedule> schedule;
  bool uneven = true;  // pp that does not divide the layers: stages as even as they can be
};

enum class Objective { step_time, tokens_per_s, memory, cost };

// One layout and what it gives.
struct Layout {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, zero = 0, virtual_stages = 1;
  int etp = 0;        // parallel.etp (0: tp; 1: experts whole, ep spread over tp too)
  int shard = 0;      // parallel.zero_shard_size (0: no HSDP)
  int placement = 0;  // 0: tp, cp, dp, pp; 1: tp, cp, pp, dp
  bool sequence_parallel = false;
  bool overlap_tp = false;          // parallel.overlap_tp
  Offload offload = Offload::none;  // parallel.offload
  Recompute recompute = Recompute::none;
  Schedule schedule = Schedule::one_f_one_b;
  std::int64_t micro_batch = 1;
  std::vector<int> stage_layers;  // empty: even stages
  // Results.
  double peak_bytes = 0;  // the worst stage's peak
  int worst_stage = 0;
  double step_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  std::int64_t grad_accum = 1;
  double compute_s = 0, recompute_s = 0, comm_s = 0, bubble_s = 0, optimizer_s = 0;
  double offload_s = 0, host_s = 0;  // the host's optimizer step and PCIe; dispatch waits
  std::int64_t order = 0;            // position in the enumeration (ties keep it)
};

struct SearchOptions {
  SearchSpace space;
  Objective objective = Objective::step_time;
  int top = 10;
  int jobs = 1;
  double headroom = 0.10;  // share of the capacity kept free
  // The peak's band at this confidence must fit (0: the estimate alone): the estimate is held
  // to band_limit of the capacity less the headroom (docs/accuracy.md#bands).
  double confidence = 0;
  // Called now and then from the searching threads' coordinator with (done, total).
  std::function<void(std::int64_t, std::int64_t)> progress;
};

struct SearchResult {
  std::vector<Layout> top;     // best first; equivalent layouts (the same numbers) listed once
  std::vector<Layout> pareto;  // peak memory vs step time, lowest memory first
  std::int64_t enumerated = 0;
  std::int64_t valid = 0;    // passed the plan's rules
  std::int64_t fitting = 0;  // fit with the headroom (their time was evaluated)
  double limit_bytes = 0;
  double estimate_limit_bytes = 0;  // what the estimate is held to (limit_bytes without a band)
  Band band;                        // the peak band's family and ratios (none at confidence 0)
  bool offload_tried = false;       // nothing fit with the plan's offload: every value was searched
};

// `base` with the layout applied, derived values derived again as the loader would (the
// gradient sync from the ZeRO stage, Megatron's bucket size from dp × cp) unless the plan set
// them. The global batch is held.
PlanInput with_layout(const PlanInput& base, const Layout& l);

// The layouts of `base`'s cluster (its world size) in `space`, in a fixed order.
std::vector<Layout> enumerate_layouts(const PlanInput& base, const SearchSpace& space);

// Searches every layout; deterministic for any number of jobs.
SearchResult search_layouts(const PlanInput& base, const SearchOptions& options);

// A layout as plan settings ("parallel.tp=8", ..., "cluster.nodes=8"), for --set: every key the
// layout sets, and the cluster it was searched on (nodes, and GPUs per node when not 8).
std::vector<std::string> layout_settings(const Layout& l, int nodes, int gpus_per_node);

// Ranking key: lower is better.
double objective_value(const Layout& l, Objective o, int world);

// The Pareto front of peak memory against step time of anything with peak_bytes, step_s and
// order (Layout, RlCandidate): lowest memory first, each faster than every one before it; ties
// keep the enumeration's order.
template <typename T>
std::vector<T> pareto_front(const std::vector<T>& all) {
  std::vector<const T*> by_memory;
  for (const T& x : all) by_memory.push_back(&x);
  std::sort(by_memory.begin(), by_memory.end(), [](const T* a, const T* b) {
    if (a->peak_bytes != b->peak_bytes) return a->peak_bytes < b->peak_bytes;
    if (a->step_s != b->step_s) return a->step_s < b->step_s;
    return a->order < b->order;
  });
  std::vector<T> front;
  for (const T* x : by_memory)
    if (front.empty() || x->step_s < front.back().step_s) front.push_back(*x);
  return front;
}

}  // namespace trainledger
