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

std::vector<LineItem> activation_items(const PlanInput& in, const Derived& d,
                                       const StagePlace& place, Phase phase) {
  std::vector<LineItem> out;
  if (in.model.count_only || (phase != Phase::forward && phase != Phase::backward)) return out;
  const double m = static_cast<double>(d.grad_accum);
  const Expr flight = layers_in_flight(in, place.stage, m);
  const int ckpt = checkpointed_layers(in, place.layers);
  const int plain = place.layers - ckpt;
  if (place.layers > 0) {
    Expr layers = Expr::term("none", 0, "B");
    const Expr plain_layers = Expr::term("layers", plain, "layers");
    const Expr ckpt_layers = Expr::term("recomputed_layers", ckpt, "recomputed layers");
    const Expr per_plain = layer_bytes_expr(in, Recompute::none);
    const Expr per_ckpt = layer_bytes_expr(in, in.training.recompute);
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

StageMemory stage_memory(const PlanInput& in, const Derived& d, const StagePlace& place) {
  StageMemory st;
  st.stage = place.stage;
  st.layers = place.layers;
  const StageParams sp = stage_params(in, place.layers, place.first, place.last);
  std::vector<LineItem> state;
  for (LineItem& item : state_items(in, d, sp))
    if (!offloaded(in, item.id)) state.push_back(std::move(item));
  double best = -1;
  for (Phase phase : k_phases) {
    std::vector<LineItem> items;
    for (const LineItem& item : state)
      if (phase != Phase::init || present_at_init(item.id)) items.push_back(item);
    std::vector<LineItem> dynamic = activation_items(in, d, place, phase);
    for (LineItem& t : temporary_items(in, d, place, sp, state, phase)) dynamic.push_back(t);
    const double dynamic_bytes = sum_values(dynamic);
    items.insert(items.end(), dynamic.begin(), dynamic.end());
    for (LineItem& o : overhead_items(in, d, phase, dynamic_bytes)) items.push_back(o);
    const double total = sum_values(items);
    if (total > best) {
      best = total;
      st.items = items;
      st.peak_phase = phase;
    }
    st.phases.push_back(PhaseTotal{phase, total, std::move(items)});
  }
  st.peak_bytes = best;
  return st;
}

}  // namespace trainledger
