// Search over an RL plan (docs/rl.md#search): where the rollout runs (colocated on every GPU,
// or split with some GPUs generating and the rest training), the engine's tensor parallelism
// and memory fraction, and the actor's training layout, on the plan's GPUs. Each pool's
// training layouts come from the layout search (trainledger/layout_search.hpp); the fastest of
// them and its Pareto front are then judged as RL steps: every phase's memory and the step's
// time (compute_rl).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainledger/layout_search.hpp"

namespace trainledger {

// What an RL search may vary besides the training layout. An empty list lets it choose.
struct RlSearchSpace {
  std::vector<RlPlacement> placement;   // default: colocated and split
  std::vector<int> rollout_gpus;        // split: GPUs that generate; default: whole-node shares
  std::vector<int> rollout_tp;          // default: divisors of a node that split the heads
  std::vector<double> memory_fraction;  // default: 0.3 ... 0.9 and the plan's
};

struct RlSearchOptions {
  SearchOptions layout;  // the training layouts' space, headroom, confidence, jobs, objective
  RlSearchSpace space;
  int layouts_per_pool = 8;  // the fastest training layouts carried on, with the Pareto front
};

// One RL configuration and what it gives.
struct RlCandidate {
  Layout layout;  // the actor's training layout (its numbers at the longest lengths)
  RlPlacement placement = RlPlacement::colocated;
  int rollout_gpus = 0;              // split: GPUs that generate
  int train_gpus = 0;                // GPUs that train ([cluster])
  int nodes = 0, gpus_per_node = 0;  // the training pool as [cluster] gives it
  bool off_policy = false;
  int rollout_tp = 1;
  double memory_fraction = 0;
  // Results.
  double step_s = 0;
  double tokens_per_s_per_gpu = 0;
  double rollout_s = 0;     // prefill and decode
  double train_side_s = 0;  // forward passes and training
  double sync_s = 0;        // weight sync and host transfers
  double training_mfu = 0;
  double peak_bytes = 0;  // the worst phase's memory per GPU
  std::string worst_phase;
  double concurrency = 0;                      // sequences an engine decodes at once
  double rollout_idle = 0, training_idle = 0;  // split: idle shares
  std::int64_t order = 0;
};

struct RlSearchResult {
  std::vector<RlCandidate> top;     // best first (per training layout and engine layout: the
                                    // memory fraction the objective likes best)
  std::vector<RlCandidate> pareto;  // worst phase's peak against step time, lowest memory first
  int total_gpus = 0;
  std::int64_t pools = 0;       // placements and splits searched
  std::int64_t layouts = 0;     // training layouts judged as RL steps
  std::int64_t enumerated = 0;  // training layouts the layout searches enumerated
  std::int64_t evaluated = 0;   // RL configurations judged
  std::int64_t fitting = 0;     // of those, the ones whose every phase fits
  std::string closest_problem;  // nothing fits: why the closest configuration does not
};

// Searches `base` (a plan with an [rl] section) on its GPUs: the [cluster] GPUs plus
// rl.rollout_gpus in split placement. Deterministic for any number of jobs.
RlSearchResult search_rl(const PlanInput& base, const RlSearchOptions& options);

// A candidate as plan settings (for --set): the training layout, the cluster, the [rl] keys.
std::vector<std::string> rl_settings(const RlCandidate& c);

// Ranking key: lower is better.
double rl_objective_value(const RlCandidate& c, Objective o, int total_gpus);

}  // namespace trainledger
