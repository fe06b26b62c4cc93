// compute_plan: derives the layout, builds each stage's memory ledger and the verdict.
#include "trainledger/plan.hpp"

#include <algorithm>

#include "memory.hpp"
#include "timing.hpp"

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
  }
  if (in.model.tied_embeddings && in.parallel.pp > 1) {
    r.warnings.push_back(
        "model: tied embeddings with pp > 1: the last stage keeps its own copy of the word "
        "embedding for the LM head (as Megatron-LM does); it is counted in that stage's memory "
        "and once in the parameter count");
  }
  if (in.parallel.sequence_parallel && in.parallel.tp == 1) {
    r.warnings.push_back("parallel: sequence_parallel has no effect with tp = 1");
  }
}

// Throughput per GPU against the same model on one node (weak scaling: same micro-batch and
// accumulation, data parallelism shrunk to what one node holds).
void add_scaling(const PlanInput& in, PlanResult& r) {
  const LineItem* here = find_item(r.time, "throughput.tokens_per_s_per_gpu");
  const ParallelSpec& p = in.parallel;
  const int model_parallel = p.tp * p.pp * p.cp;
  const int gpn = in.cluster.gpus_per_node;
  if (!here || in.cluster.nodes <= 1 || model_parallel > gpn || gpn % model_parallel != 0) return;
  PlanInput one = in;
  one.cluster.nodes = 1;
  one.parallel.dp = gpn / model_parallel;
  one.parallel.zero_shard_size = 0;
  if (one.parallel.ep > one.parallel.dp * one.parallel.cp) return;
  one.training.global_batch = in.training.micro_batch * one.parallel.dp * r.derived.grad_accum;
  const PlanResult base = compute_plan(one, PlanScope{true, false});
  const LineItem* there = find_item(base.time, "throughput.tokens_per_s_per_gpu");
  if (!there || there->value <= 0) return;
  r.time.push_back(make_item(
      "scaling.efficiency", "throughput per GPU against one node", Unit::fraction,
      Expr::term("tokens_per_s_per_gpu", here->value, "tokens/s/GPU here") /
          Expr::term("one_node", there->value,
                     "tokens/s/GPU on one node (dp " + std::to_string(one.parallel.dp) + ")"),
      "weak scaling: the same plan on one node with data parallelism shrunk"));
}

}  // namespace

std::vector<LineItem> phase_ledger(const PlanInput& input, int stage, Phase phase) {
  const std::vector<int> layers = stage_layer_counts(input);
  const int pp = static_cast<int>(layers.size());
  if (stage < 0 || stage >= pp) return {};
  const StagePlace place{stage, layers[stage], stage == 0, stage == pp - 1};
  return stage_phase_items(input, derive(input), memory_model(input), place, phase);
}

std::vector<int> stage_layer_counts(const PlanInput& in) {
  const int pp = std::max(1, in.parallel.pp);
  if (!in.parallel.stage_layers.empty()) return in.parallel.stage_layers;
  std::vector<int> out(pp, in.model.count_only ? 0 : in.model.layers / pp);
  if (!in.model.count_only) {
    for (int i = 0; i < in.model.layers % pp; ++i) out[pp - 1 - i] += 1;
  }
  return out;
}

PlanResult compute_plan(const PlanInput& input, const PlanScope& scope) {
  PlanResult r;
  r.input = input;
  r.derived = derive(input);
  const int pp = std::max(1, input.parallel.pp);
  const std::vector<int> layers = stage_layer_counts(input);
  const double capacity = static_cast<double>(input.cluster.gpu.memory_bytes);
  const MemoryModel model = memory_model(input);
  for (int s = 0; s < pp; ++s) {
    const StagePlace place{s, layers[s], s == 0, s == pp - 1};
    StageMemory st = stage_memory(input, r.derived, model, place);
    st.role = stage_role(s, pp);
    st.capacity_bytes = capacity;
    st.fits = st.peak_bytes <= capacity;
    r.stages.push_back(std::move(st));
  }
  for (int s = 0; s < pp; ++s) {
    if (r.stages[s].peak_bytes > r.stages[r.worst_stage].peak_bytes) r.worst_stage = s;
  }
  const StageMemory& worst = r.stages[r.worst_stage];
  r.verdict.peak_bytes = worst.peak_bytes;
  r.verdict.limit_bytes = capacity;
  r.verdict.fits = worst.peak_bytes <= capacity;
  r.verdict.headroom = capacity > 0 ? (capacity - worst.peak_bytes) / capacity : 0;
  r.verdict.worst_stage = r.worst_stage;
  r.verdict.phase = worst.peak_phase;
  const StagePlace worst_place{r.worst_stage, layers[r.worst_stage], r.worst_stage == 0,
                               r.worst_stage == pp - 1};
  r.host = host_memory(input, r.derived, worst, offloaded_items(input, r.derived, worst_place));
  if (scope.time) {
    const int busiest = *std::max_element(layers.begin(), layers.end());
    r.communication = communication_items(input, r.derived, busiest, r.warnings);
    r.time = time_items(input, r.derived, layers, r.communication, worst, r.warnings);
    if (scope.scaling) add_scaling(input, r);
    r.reliability = reliability_items(input, r.derived, r.time);
  }
  add_warnings(input, r);
  return r;
}

}  // namespace trainledger
