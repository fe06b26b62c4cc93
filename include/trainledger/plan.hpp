// The planner's result: one object that every renderer prints and nothing else computes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainledger/change.hpp"
#include "trainledger/ledger.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

struct Derived {
  double params = 0;            // total model parameters
  double active_params = 0;     // per token (MoE: active experts only)
  double trainable_params = 0;  // parameters that receive gradients
  int world_size = 0;
  int shard_group = 1;  // ZeRO/FSDP shard group (dp × cp, or zero_shard_size for HSDP)
  std::int64_t grad_accum = 1;
  std::int64_t global_batch = 0;
  std::int64_t tokens_per_step = 0;
};

// The moments of a training step at which memory is counted.
enum class Phase { init, forward, backward, optimizer, checkpoint };
std::string_view to_string(Phase p);

struct PhaseTotal {
  Phase phase = Phase::init;
  double bytes = 0;
};

struct StageMemory {
  int stage = 0;
  std::string role;  // "first", "middle", "last" or "only"
  int layers = 0;
  Phase peak_phase = Phase::backward;
  std::vector<LineItem> items;     // the ledger at the peak phase
  std::vector<PhaseTotal> phases;  // the total at every phase (phase_ledger gives the items)
  double peak_bytes = 0;
  double capacity_bytes = 0;
  bool fits = true;
};

// Host memory of one node (offload, checkpoint staging, data loaders, runtime).
struct HostMemory {
  std::vector<LineItem> items;
  double peak_bytes = 0;
  double capacity_bytes = 0;  // 0: not given
  bool fits = true;           // true when the capacity is not given
};

struct Verdict {
  bool fits = true;
  double peak_bytes = 0;
  double limit_bytes = 0;
  double headroom = 0;  // share of the limit left free at the worst stage (negative: over)
  // The share of the capacity the user keeps free (plan/check --headroom, 10 % by default):
  // a plan that fits by less is a near miss, which `check` fails.
  double required_headroom = 0;
  int worst_stage = 0;
  Phase phase = Phase::backward;  // the phase of the worst stage's peak
};

// Where a plan's inputs came from, as reports show it (the config layer's LoadedPlan gives it;
// a plan built in code may leave it empty).
struct PlanSource {
  std::string name;                                          // the plan file, or "(default plan)"
  std::vector<std::pair<std::string, std::string>> origins;  // key → "plan.toml:12:7", "--set"
  std::vector<std::string> warnings;                         // the loader's warnings
  std::string calibration;            // the calibration profile applied, if any
  std::vector<std::string> measured;  // keys it measured
  std::vector<std::string> assumed;   // measurable keys still assumed
};

struct PlanResult {
  PlanInput input;
  Derived derived;
  std::vector<StageMemory> stages;
  int worst_stage = 0;
  HostMemory host;
  std::vector<LineItem> communication;
  std::vector<LineItem> time;
  std::vector<LineItem> reliability;
  Verdict verdict;
  std::vector<std::string> warnings;
  // Of the warnings, those saying the numbers rest on something no input states (a count-only
  // model has no activations; collectives with no bandwidth): `check --strict` fails on them.
  std::vector<std::string> guesses;
  std::vector<Lever> levers;  // filled on request (find_levers)
};

// What compute_plan works out: memory always; the time side (communication, step,
// reliability) and the one-node comparison only when asked (searches need memory only).
struct PlanScope {
  bool time = true;
  bool scaling = true;
  // false evaluates just the stages that can hold the peak. Of the stages with the same layers
  // and the same place (first, last, middle), the one with the most micro-batches in flight
  // holds the most memory in every phase, so the verdict is the same; PlanNumbers::stages and
  // PlanResult::stages then hold those stages only, in stage order (a few for any pp: find the
  // worst by its number, StageMemory::stage). A report that lists every stage needs true.
  bool every_stage = true;
};

// Computes the plan. `input` must have passed validation (config layer); the core does no I/O
// and does not throw on user data.
PlanResult compute_plan(const PlanInput& input, const PlanScope& scope = {});

// The ledger of one stage at one phase (the plan keeps only the peak phase's items).
std::vector<LineItem> phase_ledger(const PlanInput& input, int stage, Phase phase);

// Layers held by each pipeline stage (stage_layers when given, otherwise an even split).
std::vector<int> stage_layer_counts(const PlanInput& input);
// The same into `out`, reusing its storage.
void stage_layer_counts(const PlanInput& input, std::vector<int>& out);

}  // namespace trainledger
