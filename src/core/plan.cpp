// compute_plan: derives the layout, builds each stage's memory ledger and the verdict.
#include "trainledger/plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "activations.hpp"
#include "memory.hpp"
#include "pipeline.hpp"
#include "timing.hpp"
#include "trainledger/numbers.hpp"

namespace trainledger {

namespace {

Derived derive(const PlanInput& in) {
  Derived d;
  const ParallelSpec& p = in.parallel;
  d.params = total_params(in.model);
  d.active_params = active_params(in.model);
  if (in.training.finetune != Finetune::full) {
    d.trainable_params = lora_adapter_params(in);
  } else {
    d.trainable_params = in.training.trainable_params > 0 ? in.training.trainable_params : d.params;
  }
  d.world_size = in.cluster.world_size();
  d.shard_group = p.zero > 0 ? (p.zero_shard_size > 0 ? p.zero_shard_size : p.dp * p.cp) : 1;
  const std::int64_t per_pass = in.training.micro_batch * p.dp;
  d.global_batch = in.training.global_batch > 0 ? in.training.global_batch : per_pass;
  d.grad_accum = per_pass > 0 ? d.global_batch / per_pass : 1;
  d.tokens_per_step = d.global_batch * in.training.seq_len;
  return d;
}

std::string stage_role(int stage, int pp) {
  if (pp == 1) return "only";
  if (stage == 0) return "first";
  if (stage == pp - 1) return "last";
  return "middle";
}

void add_warnings(const PlanInput& in, PlanResult& r) {
  if (in.model.count_only) {
    r.warnings.push_back(
        "model: count-only model (model.params): the ledger covers the training state only; "
        "activations, logits and FLOPs need an architecture (layers, hidden, heads, ...), and "
        "the count is spread evenly over tp x pp");
    r.guesses.push_back(r.warnings.back());
  }
  // Collectives over a link whose bandwidth no input gives: their time is left out.
  for (const std::string& w : r.warnings)
    if (w.find("_bandwidth is not given") != std::string::npos) r.guesses.push_back(w);
  if (in.model.tied_embeddings && in.parallel.pp > 1) {
    r.warnings.push_back(
        "model: tied embeddings with pp > 1: the last stage keeps its own copy of the word "
        "embedding for the LM head (as Megatron-LM does); it is counted in that stage's memory "
        "and once in the parameter count");
  }
  if (in.checkpoint.gpu_failure_rate <= 0 && in.checkpoint.node_failure_rate <= 0 &&
      !r.reliability.empty()) {
    r.warnings.push_back(
        "checkpoint: gpu_failure_rate and node_failure_rate are 0: no failures expected, so no "
        "MTBF, checkpoint interval or waste is computed");
  }
  if (is_moe(in.model)) {
    const bool capped = in.training.moe_capacity_factor > 0;
    r.warnings.push_back(fmt::format(
        "model: MoE routing load {:.2f} × the mean ({}): the busiest rank's expert activations, "
        "all-to-all messages and expert GEMMs are sized for it (docs/formulas.md#moe-load)",
        moe_load(in),
        capped ? "training.moe_capacity_factor"
               : "training.moe_imbalance, assumed: raise it for a router that is not balanced"));
  }
  if (in.parallel.sequence_parallel && in.parallel.tp == 1) {
    r.warnings.push_back("parallel: sequence_parallel has no effect with tp = 1");
  }
}

// The same plan on one node (weak scaling: same micro-batch and accumulation, data
// parallelism shrunk to what one node holds); false when the layout does not fit on one node.
bool one_node_plan(const PlanInput& in, const Derived& d, PlanInput& one) {
  const ParallelSpec& p = in.parallel;
  const int model_parallel = p.tp * p.pp * p.cp;
  const int gpn = in.cluster.gpus_per_node;
  if (in.cluster.nodes <= 1 || model_parallel > gpn || gpn % model_parallel != 0) return false;
  one = in;
  one.cluster.nodes = 1;
  one.parallel.dp = gpn / model_parallel;
  one.parallel.zero_shard_size = 0;
  const ParallelSpec& op = one.parallel;
  if (static_cast<long long>(op.tp) * op.cp * op.dp %
          (static_cast<long long>(expert_tp(op)) * op.ep) !=
      0)
    return false;
  one.training.global_batch = in.training.micro_batch * one.parallel.dp * d.grad_accum;
  return true;
}

template <typename V>
void add_scaling(double there, int one_dp, Items<V>& time) {
  if (!has_item(time, ItemId::throughput_tokens_per_s_per_gpu) || there <= 0) return;
  const double here = value_of(time, ItemId::throughput_tokens_per_s_per_gpu);
  std::string label;
  if constexpr (V::explained)
    label = "tokens/s/GPU on one node (dp " + std::to_string(one_dp) + ")";
  time.push_back(make(ItemId::scaling_efficiency, "throughput per GPU against one node",
                      Unit::fraction,
                      V::term("tokens_per_s_per_gpu", here, "tokens/s/GPU here") /
                          V::term("one_node", there, label),
                      "weak scaling: the same plan on one node with data parallelism shrunk"));
}

StagePlace place_of(const std::vector<int>& layers, int s) {
  const int pp = static_cast<int>(layers.size());
  return StagePlace{s, layers[s], s == 0, s == pp - 1};
}

// The verdict: the worst stage against the GPU's capacity.
template <typename Stages>
void set_verdict(const Stages& stages, double capacity, int& worst_stage, Verdict& v) {
  worst_stage = 0;
  for (int s = 0; s < static_cast<int>(stages.size()); ++s)
    if (stages[s].peak_bytes > stages[worst_stage].peak_bytes) worst_stage = s;
  const auto& worst = stages[worst_stage];
  v.peak_bytes = worst.peak_bytes;
  v.limit_bytes = capacity;
  v.fits = worst.peak_bytes <= capacity;
  v.headroom = capacity > 0 ? (capacity - worst.peak_bytes) / capacity : 0;
  v.worst_stage = worst_stage;
  v.phase = worst.peak_phase;
}

}  // namespace

namespace {

// The stages that can hold the peak: of those with the same layers and place, the one with the
// most micro-batches in flight (the first on a tie). Activations grow with the micro-batches in
// flight and nothing else a stage holds depends on its number, so it dominates the others in
// every phase. There are few such classes for any pp: the layer counts of the stages add up to
// the model's layers, so at most √(2 · layers) + 2 of them differ.
void peak_candidates(const PlanInput& in, const Derived& d, const std::vector<int>& layers,
                     std::vector<int>& out) {
  const int pp = static_cast<int>(layers.size());
  out.clear();
  struct Rep {
    int stage;
    double flight;
  };
  thread_local std::vector<Rep> reps;  // keeps its storage: no allocation once warm
  reps.clear();
  const double m = static_cast<double>(d.grad_accum);
  std::size_t last = 0;  // the class of the stage before, which the next usually shares
  auto same = [&](int a, int b) {
    return layers[a] == layers[b] && (a == 0) == (b == 0) && (a == pp - 1) == (b == pp - 1);
  };
  for (int s = 0; s < pp; ++s) {
    const double flight = layers_in_flight<Num>(in, s, m).value();
    std::size_t k = 0;
    if (last < reps.size() && same(reps[last].stage, s))
      k = last;
    else
      while (k < reps.size() && !same(reps[k].stage, s)) ++k;
    if (k == reps.size())
      reps.push_back(Rep{s, flight});
    else if (flight > reps[k].flight)
      reps[k] = Rep{s, flight};
    last = k;
  }
  for (const Rep& r : reps) out.push_back(r.stage);
  std::sort(out.begin(), out.end());
}

}  // namespace

PhaseLedgers::PhaseLedgers(const PlanInput& input)
    : m_input(input),
      m_derived(derive(input)),
      m_layers(stage_layer_counts(input)),
      m_model(memory_model<Expr>(input)) {}

std::vector<LineItem> PhaseLedgers::operator()(int stage, Phase phase) const {
  if (stage < 0 || stage >= static_cast<int>(m_layers.size())) return {};
  return stage_phase_items<Expr>(m_input, m_derived, m_model, place_of(m_layers, stage), phase);
}

std::vector<LineItem> phase_ledger(const PlanInput& input, int stage, Phase phase) {
  return PhaseLedgers(input)(stage, phase);
}

void stage_layer_counts(const PlanInput& in, std::vector<int>& out) {
  const int pp = std::max(1, in.parallel.pp);
  if (!in.parallel.stage_layers.empty()) {
    out.assign(in.parallel.stage_layers.begin(), in.parallel.stage_layers.end());
    return;
  }
  out.assign(pp, in.model.count_only ? 0 : in.model.layers / pp);
  if (!in.model.count_only) {
    for (int i = 0; i < in.model.layers % pp; ++i) out[pp - 1 - i] += 1;
  }
}

std::vector<int> stage_layer_counts(const PlanInput& in) {
  std::vector<int> out;
  stage_layer_counts(in, out);
  return out;
}

PlanResult compute_plan(const PlanInput& input, const PlanScope& scope) {
  PlanResult r;
  r.input = input;
  r.derived = derive(input);
  const std::vector<int> layers = stage_layer_counts(input);
  const double capacity = static_cast<double>(input.cluster.gpu.memory_bytes);
  const MemoryModel<Expr> model = memory_model<Expr>(input);
  const int pp = static_cast<int>(layers.size());
  std::vector<int> which;
  if (scope.every_stage) {
    which.resize(pp);
    for (int s = 0; s < pp; ++s) which[s] = s;
  } else {
    peak_candidates(input, r.derived, layers, which);
  }
  r.stages.reserve(which.size());
  for (const int s : which) {
    StageMemory st = stage_memory<Expr>(input, r.derived, model, place_of(layers, s));
    st.role = stage_role(s, pp);
    st.capacity_bytes = capacity;
    st.fits = st.peak_bytes <= capacity;
    r.stages.push_back(std::move(st));
  }
  int worst_index = 0;
  set_verdict(r.stages, capacity, worst_index, r.verdict);
  const StageMemory& worst = r.stages[worst_index];
  r.worst_stage = worst.stage;
  r.verdict.worst_stage = worst.stage;
  const Items<Expr> offloaded =
      offloaded_items<Expr>(input, r.derived, place_of(layers, r.worst_stage));
  const HostOf<Expr> host = host_memory<Expr>(input, r.derived, worst.items, offloaded);
  r.host.items = host.items;
  r.host.peak_bytes = host.peak_bytes;
  r.host.capacity_bytes = input.cluster.host_memory;
  r.host.fits = r.host.capacity_bytes <= 0 || r.host.peak_bytes <= r.host.capacity_bytes;
  r.verdict.host_fits = r.host.fits;
  if (scope.time) {
    const StagePlace pace = place_of(layers, pace_stage(input, layers));
    Comm<Expr> comm =
        communication<Expr>(input, r.derived, pace.layers, pace.first, pace.last, &r.warnings);
    r.communication = std::move(comm.items);
    r.time =
        time_items<Expr>(input, r.derived, layers, comm.dims, worst.items, offloaded, &r.warnings);
    PlanInput one;
    if (scope.scaling && find_item(r.time, ItemId::throughput_tokens_per_s_per_gpu) &&
        one_node_plan(input, r.derived, one)) {
      const PlanResult base = compute_plan(one, PlanScope{true, false});
      add_scaling<Expr>(value_of(base.time, ItemId::throughput_tokens_per_s_per_gpu),
                        one.parallel.dp, r.time);
    }
    r.reliability = reliability_items<Expr>(input, r.derived, r.time);
  }
  add_warnings(input, r);
  if (input.rl.enabled && scope.time && scope.scaling) {
    r.rl = compute_rl(r);
    r.verdict.rl_fits = r.rl.problem.empty();
  }
  apply_bands(r, k_default_confidence);
  return r;
}

void evaluate(const PlanInput& input, PlanNumbers& out, const PlanScope& scope) {
  out.derived = derive(input);
  stage_layer_counts(input, out.stage_layers);
  const std::vector<int>& layers = out.stage_layers;
  const int pp = static_cast<int>(layers.size());
  const double capacity = static_cast<double>(input.cluster.gpu.memory_bytes);
  const MemoryModel<Num> model = memory_model<Num>(input);
  if (scope.every_stage) {
    out.stages.resize(pp);
    for (int s = 0; s < pp; ++s)
      out.stages[s] = stage_memory<Num>(input, out.derived, model, place_of(layers, s));
  } else {
    thread_local std::vector<int> which;
    peak_candidates(input, out.derived, layers, which);
    out.stages.resize(which.size());
    for (std::size_t k = 0; k < which.size(); ++k)
      out.stages[k] = stage_memory<Num>(input, out.derived, model, place_of(layers, which[k]));
  }
  set_verdict(out.stages, capacity, out.worst_index, out.verdict);
  const StageNumbers& worst = out.stages[out.worst_index];
  out.worst_stage = worst.stage;
  out.verdict.worst_stage = worst.stage;
  out.offloaded = offloaded_items<Num>(input, out.derived, place_of(layers, out.worst_stage));
  const HostOf<Num> host = host_memory<Num>(input, out.derived, worst.items, out.offloaded);
  out.host = host.items;
  out.host_peak_bytes = host.peak_bytes;
  out.verdict.host_fits =
      input.cluster.host_memory <= 0 || host.peak_bytes <= input.cluster.host_memory;
  out.comm = CommResults{};
  out.communication.clear();
  out.time.clear();
  out.reliability.clear();
  if (scope.time) evaluate_time(input, out, scope);
}

void evaluate_time(const PlanInput& input, PlanNumbers& out, const PlanScope& scope) {
  const std::vector<int>& layers = out.stage_layers;
  const StageNumbers& worst = out.stages[out.worst_index];
  const StagePlace pace = place_of(layers, pace_stage(input, layers));
  const Comm<Num> comm =
      communication<Num>(input, out.derived, pace.layers, pace.first, pace.last, nullptr);
  out.comm = comm.dims;
  out.communication = comm.items;
  out.time =
      time_items<Num>(input, out.derived, layers, comm.dims, worst.items, out.offloaded, nullptr);
  if (scope.scaling && has_item(out.time, ItemId::throughput_tokens_per_s_per_gpu)) {
    PlanInput one;  // built only when asked: a plan's defaults allocate
    if (one_node_plan(input, out.derived, one)) {
      PlanNumbers base;
      evaluate(one, base, PlanScope{true, false});
      add_scaling<Num>(value_of(base.time, ItemId::throughput_tokens_per_s_per_gpu),
                       one.parallel.dp, out.time);
    }
  }
  out.reliability = reliability_items<Num>(input, out.derived, out.time);
}

}  // namespace trainledger
