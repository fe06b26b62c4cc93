// A stage's ledger at every phase of a step; the peak is the largest (docs/formulas.md#peak).
#include "memory.hpp"

#include <algorithm>
#include <cmath>

#include "activations.hpp"
#include "pipeline.hpp"
#include "state.hpp"

namespace trainledger {

namespace {

constexpr Phase k_phases[] = {Phase::init, Phase::forward, Phase::backward, Phase::optimizer,
                              Phase::checkpoint};

constexpr const char* k_src_korthikanti =
    "Korthikanti et al. 2022, Reducing Activation Recomputation, §4 (saved tensors per layer) "
    "and §5 (selective recompute); tensor list in docs/formulas.md#activations";
constexpr const char* k_src_loss =
    "PyTorch cross_entropy on an fp32 copy of the logits: log_softmax saves its fp32 output; "
    "Megatron-LM splits the vocabulary over tp (vocab-parallel cross-entropy)";

bool offloaded(const PlanInput& in, const std::string& id) {
  const Offload o = in.parallel.offload;
  if (o == Offload::none) return false;
  const bool optimizer = id.rfind("optimizer.", 0) == 0 || id == "master" || id == "grads";
  return optimizer || (o == Offload::optimizer_params && id == "params");
}

bool present_at_init(const std::string& id) {
  return id == "params" || id == "master" || id.rfind("params.", 0) == 0;
}

// Layers of the stage that are checkpointed under the plan's recompute mode.
int checkpointed_layers(const PlanInput& in, int layers) {
  if (in.training.recompute == Recompute::none) return 0;
  return static_cast<int>(std::lround(in.training.recompute_layers * layers));
}

}  // namespace

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::init:
      return "init";
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
      return "optimizer";
    case Phase::checkpoint:
      return "checkpoint";
  }
  return "?";
}

MemoryModel memory_model(const PlanInput& in) {
  MemoryModel m;
  if (!in.model.count_only) {
    m.layer_none = layer_bytes_expr(in, Recompute::none);
    m.layer_mode = layer_bytes_expr(in, in.training.recompute);
    m.largest_tensor = largest_layer_tensor(in);
  }
  fixed_overheads(in, m);
  return m;
}

std::vector<LineItem> activation_items(const PlanInput& in, const Derived& d,
                                       const MemoryModel& model, const StagePlace& place) {
  std::vector<LineItem> out;
  if (in.model.count_only) return out;
  const double m = static_cast<double>(d.grad_accum);
  const Expr flight = layers_in_flight(in, place.stage, m);
  const int ckpt = checkpointed_layers(in, place.layers);
  const int plain = place.layers - ckpt;
  if (place.layers > 0) {
    Expr layers = Expr::term("none", 0, "B");
    const Expr plain_layers = Expr::term("layers", plain, "layers");
    const Expr ckpt_layers = Expr::term("recomputed_layers", ckpt, "recomputed layers");
    const Expr& per_plain = model.layer_none;
    const Expr& per_ckpt = model.layer_mode;
    if (ckpt == 0)
      layers = per_plain * plain_layers;
    else if (plain == 0)
      layers = per_ckpt * ckpt_layers;
    else
      layers = per_plain * plain_layers + per_ckpt * ckpt_layers;
    std::string label =
        "activations (" + std::string(to_string(in.training.recompute)) + " recompute)";
    out.push_back(make_item("activations", label, Unit::bytes, layers * flight, k_src_korthikanti));
  }
  std::vector<SavedTensor> edges;
  if (place.first) edges = first_stage_tensors(in);
  Expr edge_expr = Expr::term("none", 0, "B");
  if (!edges.empty()) edge_expr = tensors_expr(in, edges) * flight;
  if (place.last) {
    const Expr head = tensors_expr(in, last_stage_tensors(in)) * loss_in_flight(in, m);
    edge_expr = edges.empty() ? head : edge_expr + head;
  }
  if (place.last || !edges.empty()) {
    out.push_back(make_item("activations.edges",
                            place.last ? "final norm and LM-head inputs" : "embedding side",
                            Unit::bytes, edge_expr, k_src_korthikanti));
  }
  if (place.last && in.training.loss == Loss::standard) {
    const Expr logits = Expr::term("bytes", 4, "B (fp32)") *
                        Expr::term("tokens", local_tokens(in), "tokens") *
                        Expr::term("vocab", static_cast<double>(in.model.vocab), "vocab") /
                        Expr::term("tp", in.parallel.tp, "tp") * loss_in_flight(in, m);
    out.push_back(
        make_item("logits", "log-probs for the loss (fp32)", Unit::bytes, logits, k_src_loss));
  }
  return out;
}

std::vector<LineItem> offloaded_items(const PlanInput& in, const Derived& d,
                                      const StagePlace& place) {
  std::vector<LineItem> out;
  const StageParams sp = stage_params(in, place.layers, place.first, place.last);
  for (LineItem& item : state_items(in, d, sp))
    if (offloaded(in, item.id)) out.push_back(std::move(item));
  return out;
}

namespace {

// What a stage holds in every phase: its state and its activations.
struct StageBase {
  std::vector<LineItem> state;
  std::vector<LineItem> activations;
  double activation_bytes = 0;
};

StageBase stage_base(const PlanInput& in, const Derived& d, const MemoryModel& model,
                     const StagePlace& place) {
  StageBase b;
  const StageParams sp = stage_params(in, place.layers, place.first, place.last);
  for (LineItem& item : state_items(in, d, sp))
    if (!offloaded(in, item.id)) b.state.push_back(std::move(item));
  b.activations = activation_items(in, d, model, place);
  b.activation_bytes = sum_values(b.activations);
  return b;
}

bool holds_activations(Phase p) { return p == Phase::forward || p == Phase::backward; }

// The phase's ledger; `total_only` skips assembling the list (no copies) and returns it empty.
std::vector<LineItem> phase_items(const PlanInput& in, const Derived& d, const MemoryModel& model,
                                  const StagePlace& place, const StageBase& base, Phase phase,
                                  bool total_only, double& total) {
  std::vector<LineItem> temporaries = temporary_items(in, d, model, place, base.state, phase);
  const double dynamic =
      (holds_activations(phase) ? base.activation_bytes : 0.0) + sum_values(temporaries);
  total = dynamic + sum_values(model.fixed);
  if (phase != Phase::init) total += sum_values(model.kernels);
  for (const LineItem& item : base.state)
    if (phase != Phase::init || present_at_init(item.id)) total += item.value;
  std::vector<LineItem> frag;
  if (dynamic > 0) frag.push_back(fragmentation_item(in, dynamic));
  total += sum_values(frag);
  std::vector<LineItem> items;
  if (total_only) return items;
  for (const LineItem& item : base.state)
    if (phase != Phase::init || present_at_init(item.id)) items.push_back(item);
  if (holds_activations(phase))
    items.insert(items.end(), base.activations.begin(), base.activations.end());
  for (LineItem& t : temporaries) items.push_back(std::move(t));
  items.insert(items.end(), model.fixed.begin(), model.fixed.end());
  if (phase != Phase::init) items.insert(items.end(), model.kernels.begin(), model.kernels.end());
  for (LineItem& f : frag) items.push_back(std::move(f));
  return items;
}

}  // namespace

std::vector<LineItem> stage_phase_items(const PlanInput& in, const Derived& d,
                                        const MemoryModel& model, const StagePlace& place,
                                        Phase phase) {
  double total = 0;
  return phase_items(in, d, model, place, stage_base(in, d, model, place), phase, false, total);
}

StageMemory stage_memory(const PlanInput& in, const Derived& d, const MemoryModel& model,
                         const StagePlace& place) {
  StageMemory st;
  st.stage = place.stage;
  st.layers = place.layers;
  const StageBase base = stage_base(in, d, model, place);
  double best = -1;
  for (Phase phase : k_phases) {
    double total = 0;
    phase_items(in, d, model, place, base, phase, true, total);
    st.phases.push_back(PhaseTotal{phase, total});
    if (total > best) {
      best = total;
      st.peak_phase = phase;
    }
  }
  double total = 0;
  st.items = phase_items(in, d, model, place, base, st.peak_phase, false, total);
  st.peak_bytes = sum_values(st.items);
  return st;
}

}  // namespace trainledger
