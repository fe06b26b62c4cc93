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

// How far an estimate can be off: the range that holds the measured value at `confidence`,
// from the residuals (measured / predicted) of the reference cases of the plan's family
// (docs/accuracy.md#bands). Only the estimated part widens: measured inputs (a calibration
// profile's) count as exact. `cases` is 0 when no band was made.
struct Band {
  double low = 0;
  double high = 0;
  double confidence = 0;
  std::string family;  // "megatron", "dense · multi-GPU", "every case"
  int cases = 0;       // reference cases of that family
  // low = measured + (estimate − measured) × ratio_low, high likewise with ratio_high.
  double ratio_low = 1;
  double ratio_high = 1;
  double measured = 0;
};

// The largest estimate whose band's upper end stays within `limit` (the band's measured part
// and ratio kept): the limit the gate, --max and search hold the estimate to.
double band_limit(const Band& band, double limit);

// RL post-training (docs/rl.md): one phase of a step, with what a GPU of its pool holds.
struct RlPhase {
  std::string name;  // "rollout", "log-probs", "reference", "reward", "values", "training",
                     // "critic training", "weight sync"
  std::string pool;  // "all" (colocated), "rollout" or "training" (split)
  std::vector<LineItem> items;  // memory per GPU during the phase
  double peak_bytes = 0;
  double capacity_bytes = 0;
  bool fits = true;
};

// One part of an RL step on the GPUs that run it (docs/rl.md#step-time): when it starts and
// ends, in seconds from the step's start, and how much of it the step waits for. Colocated and
// on-policy steps wait for every part; in a split off-policy step the shorter pool's work
// overlaps the longer's (the engines generate the next step's samples while this step trains),
// so only the longer lane's parts and the weight sync are exposed. The exposed parts sum to the
// step (the invariant checker holds it).
struct RlSpan {
  ItemId item = ItemId::rl_time_step;  // the rl.time item it draws
  std::string lane;                    // "all" (colocated), "rollout" or "training" (split)
  double start_s = 0;
  double end_s = 0;
  double exposed_s = 0;
  bool next_step = false;  // split off-policy generation of the next step's samples
};

struct RlResult {
  bool present = false;
  std::vector<RlPhase> phases;
  int worst = 0;                 // the phase with the least memory left
  std::string problem;           // why the plan does not fit, naming the phase ("" when it does)
  bool kv_fits = true;           // the engine's KV cache holds one sequence of the longest length
  std::vector<LineItem> time;    // the step's parts, the step, throughput, MFU, idle shares
  std::vector<RlSpan> timeline;  // the step's parts in time order, lane by lane
  int engines = 0;
  int rollout_gpus = 0;  // GPUs that generate (all of them when colocated)
  int total_gpus = 0;
  double kv_bytes_per_token = 0;  // per engine rank, every layer
  double kv_tokens = 0;           // tokens the engine's KV cache holds, per engine
  double concurrency = 0;         // sequences an engine decodes at once
  double samples = 0;             // sequences per step
  double tokens_per_step = 0;     // prompt and response tokens per step, at the means
  double host_bytes = 0;          // per node: sleeping engine weights and offloaded trainer state
  // The bands on rl.time.step and rl.tokens_per_s_per_gpu, from the RL runs' residuals
  // (docs/accuracy.md#bands); cases 0 when none was made.
  Band step_band;
  Band throughput_band;
};

struct Verdict {
  bool fits = true;  // every GPU: the worst stage's peak within the GPU's capacity
  // Every host: the host memory per node (offloaded state, pinned buffers, the loader) within
  // cluster.host_memory (true when no host capacity is given). A plan fits only when both do:
  // plan_fits().
  bool host_fits = true;
  // RL plans: every phase of the step (rollout, log-prob passes, training, weight sync) fits,
  // and the rollout engine's KV cache holds one sequence of the longest length (docs/rl.md).
  bool rl_fits = true;
  // The band on the worst stage's peak, and whether its upper end fits in the capacity less the
  // required headroom (a plan that fits only at the estimate is "near": check fails it).
  Band peak_band;
  bool band_fits = true;
  double peak_bytes = 0;
  double limit_bytes = 0;
  double headroom = 0;  // share of the limit left free at the worst stage (negative: over)
  // The share of the capacity the user keeps free (plan/check --headroom, 10 % by default):
  // a plan that fits by less is a near miss, which `check` fails.
  double required_headroom = 0;
  int worst_stage = 0;
  Phase phase = Phase::backward;  // the phase of the worst stage's peak
};

// A plan fits only when every GPU and every host does.
inline bool plan_fits(const Verdict& v) { return v.fits && v.host_fits && v.rl_fits; }

// A plan whose estimate fits with the required headroom but whose band's upper end does not:
// reports call it near, and check fails it.
inline bool near_by_band(const Verdict& v) {
  return plan_fits(v) && v.headroom >= v.required_headroom && !v.band_fits;
}

// The pipeline stage of a global rank under parallel.placement: the dimensions placed inside pp
// set its stride (Megatron-Core's default order tp-cp-dp-pp puts stage s on ranks
// s·tp·cp·dp to (s+1)·tp·cp·dp − 1).
int stage_of_rank(const PlanInput& in, long long rank);

// Only the host memory per node is over: the GPU fixes would not help (offloading more makes it
// worse); the reports list the host's items instead.
inline bool only_host_over(const Verdict& v) { return v.fits && !v.host_fits; }

// A plan that does not fit, or fits by less than the required headroom, or only at its
// estimate: plan and check list what would make it fit.
inline bool needs_fixes(const Verdict& v) {
  return !plan_fits(v) || v.headroom < v.required_headroom || !v.band_fits;
}

// Where a plan's inputs came from, as reports show it (the config layer's LoadedPlan gives it;
// a plan built in code may leave it empty).
struct PlanSource {
  std::string name;                                          // the plan file, or "(default plan)"
  std::vector<std::pair<std::string, std::string>> origins;  // key → "plan.toml:12:7", "--set"
  std::vector<std::string> warnings;                         // the loader's warnings
  std::string calibration;                 // the calibration profiles applied, if any ("a, b")
  std::vector<std::string> measured;       // keys they measured
  std::vector<std::string> measured_from;  // per measured key, the profile that set it
  std::vector<std::string> assumed;        // measurable keys still assumed
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
  // For a plan that does not fit with its headroom (or only at the estimate, not at its band's
  // upper end): the changes that free memory on the worst stage (find_fixes), filled on request
  // as check does; the reports print them under the verdict.
  std::vector<Fix> fixes;
  // Bands on time.step and on throughput.tokens_per_s_per_gpu (none without the time side).
  Band step_band;
  Band throughput_band;
  // RL post-training: the phases of a step around the training above (present with [rl]).
  RlResult rl;
};

// The RL phases of a plan with an [rl] section (src/core/rl.cpp); `plan` holds its training.
RlResult compute_rl(const PlanResult& plan);
// The same with the training plan at the mean lengths already worked out: `in` holds the [rl]
// section, `plan` the actor's training at the longest lengths (its memory: PlanScope{false,
// false} will do), `mean_plan` compute_plan(rl_mean_input(in), PlanScope{true, false}).
// search evaluates many RL settings over one training layout with it.
RlResult compute_rl(const PlanInput& in, const PlanResult& plan, const PlanResult& mean_plan);
// The actor's training at the mean prompt and response lengths (the step time's basis).
PlanInput rl_mean_input(const PlanInput& in);

// The confidence of the bands every plan carries unless --confidence says otherwise.
inline constexpr double k_default_confidence = 0.9;

// Sets the plan's bands at `confidence` (0 < confidence < 1; 0 removes them) and the verdict's
// band_fits against its required headroom. compute_plan applies the default confidence.
void apply_bands(PlanResult& plan, double confidence);

// The verdict as the gate gives it: against `capacity_bytes` (check --capacity; 0 keeps the
// GPU's), with `required_headroom` kept free and bands at `confidence` (0 removes them).
void judge(PlanResult& plan, double capacity_bytes, double required_headroom, double confidence);

// The band on a peak of `peak_bytes` of which `measured_bytes` are measured, for a plan of
// `input`'s family (search reports it for its layouts).
Band memory_band(const PlanInput& input, double peak_bytes, double measured_bytes,
                 double confidence);

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
