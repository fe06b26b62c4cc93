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
    "Megatron-LM splits the vocabulary over tp (vocab-parallel cross-entropy); a fused kernel "
    "(flash-attn's CrossEntropyLoss) keeps only the 16-bit logits and a per-row log-sum-exp; "
    "PyTorch's pipelining keeps every micro-batch's output to the end of the step "
    "(torch/distributed/pipelining/stage.py, forward_one_chunk: output_chunks)";

// What leaves the GPU under parallel.offload, per stack:
// - Megatron-Core's --optimizer-cpu-offload (HybridDeviceOptimizer) moves the optimizer state
//   and the fp32 master parameters; the fp32 main_grad buffer stays on the GPU and is copied
//   over each step (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py).
// - PyTorch FSDP's CPUOffload(offload_params=True) keeps the sharded FlatParameter (or FSDP2
//   DTensor shard), its gradient and the optimizer on the host; a quantized (NF4) base stored
//   in the flat parameter (bnb_4bit_quant_storage) goes with it
//   (torch/distributed/fsdp/_flat_param.py, _fully_shard/_fsdp_param.py offload_policy).
// - DeepSpeed offload_optimizer / offload_param (ZeRO-Offload, ZeRO-Infinity): the catalogue's
//   offloaded_by.
bool offloaded(const PlanInput& in, ItemId id) {
  const Offload o = in.parallel.offload;
  const Framework f = in.training.framework;
  if (f == Framework::megatron && id == ItemId::grads) return false;
  if ((f == Framework::pytorch || f == Framework::hf) && o == Offload::optimizer_params &&
      (id == ItemId::params_nf4 || id == ItemId::params_nf4_constants))
    return true;
  return offloaded_under(id, o);
}

bool present_at_init(ItemId id) { return info(id).at_init; }

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

template <typename V>
MemoryModel<V> memory_model(const PlanInput& in) {
  MemoryModel<V> m;
  if (!in.model.count_only) {
    const Tensors layer = layer_tensors(in);
    m.layer_none = layer_bytes_expr<V>(in, layer, Recompute::none);
    m.layer_mode = layer_bytes_expr<V>(in, layer, in.training.recompute);
    m.largest_tensor = largest_layer_tensor(in, layer);
    if (is_moe(in.model) && dense_mlp_layers(in.model) > 0) {
      const Tensors dl = layer_tensors(in, false);  // the dense MLP of width model.ffn
      m.dense_kind = true;
      m.dense_none = layer_bytes_expr<V>(in, dl, Recompute::none);
      m.dense_mode = layer_bytes_expr<V>(in, dl, in.training.recompute);
      m.largest_tensor = std::max(m.largest_tensor, largest_layer_tensor(in, dl));
    }
  }
  fixed_overheads<V>(in, m);
  return m;
}

template <typename V>
Items<V> activation_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                          const StagePlace& place) {
  Items<V> out;
  if (in.model.count_only) return out;
  const double m = static_cast<double>(d.grad_accum);
  const V flight = layers_in_flight<V>(in, place.stage, m);
  // The last stage also keeps the multi-token-prediction modules' layers.
  const int mtp = place.last ? in.model.mtp_layers : 0;
  const int stage_layers = place.layers + mtp;
  const int ckpt = checkpointed_layers(in, stage_layers);
  // A MoE model's dense-MLP layers on this stage (the multi-token-prediction layers are MoE).
  const int dense =
      model.dense_kind ? place.layers - stage_moe_layers(in.model, place.layers, place.first) : 0;
  if (stage_layers > 0) {
    V layers = V::term("none", 0, "B");
    bool any = false;
    auto add = [&](const V& per, int count, const char* key, const char* what) {
      if (count <= 0) return;
      const V part = per * V::term(key, count, what);
      layers = any ? layers + part : part;
      any = true;
    };
    // Recompute applies to the same share of each kind of layer.
    const int dense_ckpt =
        stage_layers > 0
            ? static_cast<int>(std::lround(static_cast<double>(ckpt) * dense / stage_layers))
            : 0;
    const int moe_ckpt = ckpt - dense_ckpt;
    const int moe = stage_layers - dense;
    add(model.layer_none, moe - moe_ckpt, "layers", dense > 0 ? "MoE layers" : "layers");
    add(model.layer_mode, moe_ckpt, "recomputed_layers",
        dense > 0 ? "recomputed MoE layers" : "recomputed layers");
    add(model.dense_none, dense - dense_ckpt, "dense_layers", "dense-MLP layers");
    add(model.dense_mode, dense_ckpt, "recomputed_dense_layers", "recomputed dense-MLP layers");
    if (!any) layers = model.layer_none * V::term("layers", 0, "layers");
    auto label = [&] {
      return "activations (" + std::string(to_string(in.training.recompute)) + " recompute)";
    };
    // Megatron-Core's activation offloading: the first k layers' saved tensors live in host
    // memory between their forward and backward; at most the other layers' stay on the GPU
    // (Transformer Engine cpu_offload.py: before layer N − k + i runs, layer i's copy is done).
    const int offloaded = in.training.activation_offload_layers;
    if (offloaded > 0 && offloaded < stage_layers)
      layers = layers * V::term("resident_share",
                                static_cast<double>(stage_layers - offloaded) / stage_layers,
                                "of the layers' activations on the GPU ((N − k)/N, the rest "
                                "offloaded)");
    V saved = layers * flight;
    // A replica's measurement of what the stack's layers really save (calibrate compare
    // --replica's cluster.activation_factor).
    if (in.cluster.activation_factor != 1)
      saved = saved * input<V>(in, "cluster.activation_factor", "activation_factor",
                               in.cluster.activation_factor, "measured over the ledger's");
    out.push_back(make(ItemId::activations, label, Unit::bytes, saved, k_src_korthikanti));
  }
  Tensors edges;
  if (place.first) edges = first_stage_tensors(in);
  V edge_expr = V::term("none", 0, "B");
  if (!edges.empty()) edge_expr = tensors_expr<V>(in, edges) * flight;
  // Each multi-token-prediction module runs the LM head and the loss once more.
  const V heads = V::term("heads", 1.0 + mtp, "LM-head passes (1 + multi-token prediction)");
  auto times_heads = [&](const V& e) { return mtp > 0 ? e * heads : e; };
  if (place.last) {
    const V head =
        times_heads(tensors_expr<V>(in, last_stage_tensors(in)) * loss_in_flight<V>(in, m));
    edge_expr = edges.empty() ? head : edge_expr + head;
  }
  if (place.last || !edges.empty()) {
    out.push_back(make(ItemId::activations_edges,
                       place.last ? "final norm and LM-head inputs" : "embedding side", Unit::bytes,
                       edge_expr, k_src_korthikanti));
  }
  // The micro-batches whose logits the last stage holds: the one at the loss, and under
  // PyTorch's pipelining every earlier one of the step too. Its stage keeps each micro-batch's
  // output until the step ends, to merge them for the caller
  // (torch/distributed/pipelining/stage.py, _PipelineStageBase.forward_one_chunk:
  // output_chunks.append(output); backward_one_chunk only detaches the last stage's output,
  // clear_runtime_states frees them at the next step; parallel.keep_stage_outputs = false for
  // step(return_outputs=False)), and the last stage's output is the logits the loss reads
  // (fp32 in torchtitan's Llama, Transformer.forward: .float()).
  V at_loss = loss_in_flight<V>(in, m);
  const Framework f = in.training.framework;
  if (place.last && in.parallel.pp > 1 && (f == Framework::pytorch || f == Framework::hf) &&
      in.parallel.schedule != Schedule::gpipe && in.parallel.keep_stage_outputs && m > 1)
    at_loss = at_loss + V::term("outputs_kept", m - 1,
                                "earlier micro-batches' outputs kept to the end of the step "
                                "(PyTorch pipelining)");
  if (place.last && in.training.loss == Loss::fused) {
    // A fused cross-entropy kernel saves the 16-bit logits it reads (and a per-row fp32
    // log-sum-exp) and computes their gradient from them in backward.
    const V logits =
        (V::term("bytes", 2, "B (16-bit)") *
             V::term("vocab", static_cast<double>(in.model.vocab), "vocab") /
             V::term("tp", loss_vocab_split(in), "ranks the vocabulary is split over") +
         V::term("lse_bytes", 4, "B (fp32 log-sum-exp)")) *
        V::term("tokens", local_tokens(in), "tokens") * at_loss;
    out.push_back(make(ItemId::logits, "logits for the fused loss (16-bit)", Unit::bytes,
                       times_heads(logits), k_src_loss));
  }
  if (place.last && in.training.loss == Loss::standard) {
    const bool fp32 = in.training.loss_dtype == DType::fp32;
    const V logits = V::term("bytes", dtype_bytes(in.training.loss_dtype),
                             fp32 ? "B (fp32)" : "B (16-bit: loss_dtype)") *
                     V::term("tokens", local_tokens(in), "tokens") *
                     V::term("vocab", static_cast<double>(in.model.vocab), "vocab") /
                     V::term("tp", loss_vocab_split(in), "ranks the vocabulary is split over") *
                     at_loss;
    out.push_back(make(ItemId::logits,
                       fp32 ? "log-probs for the loss (fp32)" : "log-probs for the loss (16-bit)",
                       Unit::bytes, times_heads(logits), k_src_loss));
  }
  return out;
}

template <typename V>
Items<V> offloaded_items(const PlanInput& in, const Derived& d, const StagePlace& place) {
  Items<V> out;
  const StageParams sp = stage_params(in, place.layers, place.first, place.last);
  for (const auto& item : state_items<V>(in, d, sp))
    if (offloaded(in, item.item)) out.push_back(item);
  return out;
}

namespace {

// What a stage holds in every phase: its state and its activations.
template <typename V>
struct StageBase {
  Items<V> state;
  Items<V> activations;
  double activation_bytes = 0;
};

template <typename V>
StageBase<V> stage_base(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                        const StagePlace& place) {
  StageBase<V> b;
  const StageParams sp = stage_params(in, place.layers, place.first, place.last);
  for (const auto& item : state_items<V>(in, d, sp))
    if (!offloaded(in, item.item)) b.state.push_back(item);
  b.activations = activation_items<V>(in, d, model, place);
  b.activation_bytes = sum_values(b.activations);
  return b;
}

bool holds_activations(Phase p) { return p == Phase::forward || p == Phase::backward; }

// Whether a state item is held in a phase. Under PyTorch autocast (torch.optim over fp32
// parameters, no FSDP/ZeRO-3) the 16-bit weights are autocast's cast cache and the copies the
// GEMMs save for backward: they exist in the forward and backward passes only. zero_grad()
// frees the gradients (set_to_none=True, PyTorch 2.0's default, torch/optim/optimizer.py), so
// with one micro-batch per step the forward runs without them. Measured on one H200
// (tests/reference/replica/h200-20261204): the optimizer phase of AdamW with autocast peaks at
// 20.0 B per parameter (fp32 weights, gradients, m, v and the foreach step's copy), no 16-bit
// weights in it.
bool held_in(const PlanInput& in, const Derived& d, ItemId item, Phase phase) {
  const TrainingSpec& t = in.training;
  const bool torch_optim = t.framework == Framework::pytorch || t.framework == Framework::hf;
  if (torch_optim && item == ItemId::params && master_bytes(t) > 0 && in.parallel.zero < 3 &&
      t.finetune == Finetune::full)
    return holds_activations(phase);
  if (phase == Phase::init) return present_at_init(item);
  if (torch_optim && item == ItemId::grads && phase == Phase::forward && d.grad_accum <= 1)
    return false;
  return true;
}

// The phase's ledger; `total_only` skips assembling the list and returns it empty.
template <typename V>
Items<V> phase_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                     const StagePlace& place, const StageBase<V>& base, Phase phase,
                     bool total_only, double& total) {
  Items<V> temporaries = temporary_items<V>(in, d, model, place, base.state, phase);
  const double dynamic =
      (holds_activations(phase) ? base.activation_bytes : 0.0) + sum_values(temporaries);
  total = dynamic + sum_values(model.fixed);
  if (phase != Phase::init) total += sum_values(model.kernels);
  for (const auto& item : base.state)
    if (held_in(in, d, item.item, phase)) total += item.value;
  Items<V> frag;
  if (dynamic > 0) frag.push_back(fragmentation_item<V>(in, dynamic, total));
  total += sum_values(frag);
  Items<V> items;
  if (total_only) return items;
  for (const auto& item : base.state)
    if (held_in(in, d, item.item, phase)) items.push_back(item);
  if (holds_activations(phase)) append(items, base.activations);
  append(items, temporaries);
  append(items, model.fixed);
  if (phase != Phase::init) append(items, model.kernels);
  append(items, frag);
  return items;
}

}  // namespace

template <typename V>
Items<V> stage_phase_items(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                           const StagePlace& place, Phase phase) {
  double total = 0;
  return phase_items<V>(in, d, model, place, stage_base<V>(in, d, model, place), phase, false,
                        total);
}

template <typename V>
StageOf<V> stage_memory(const PlanInput& in, const Derived& d, const MemoryModel<V>& model,
                        const StagePlace& place) {
  StageOf<V> st;
  st.stage = place.stage;
  st.layers = place.layers;
  const StageBase<V> base = stage_base<V>(in, d, model, place);
  double best = -1;
  for (Phase phase : k_phases) {
    double total = 0;
    phase_items<V>(in, d, model, place, base, phase, true, total);
    if constexpr (V::explained)
      st.phases.push_back(PhaseTotal{phase, total});
    else
      st.phase_bytes[static_cast<int>(phase)] = total;
    if (total > best) {
      best = total;
      st.peak_phase = phase;
    }
  }
  double total = 0;
  st.items = phase_items<V>(in, d, model, place, base, st.peak_phase, false, total);
  st.peak_bytes = sum_values(st.items);
  return st;
}

template MemoryModel<Expr> memory_model<Expr>(const PlanInput&);
template Items<Expr> activation_items<Expr>(const PlanInput&, const Derived&,
                                            const MemoryModel<Expr>&, const StagePlace&);
template Items<Expr> offloaded_items<Expr>(const PlanInput&, const Derived&, const StagePlace&);
template Items<Expr> stage_phase_items<Expr>(const PlanInput&, const Derived&,
                                             const MemoryModel<Expr>&, const StagePlace&, Phase);
template StageOf<Expr> stage_memory<Expr>(const PlanInput&, const Derived&,
                                          const MemoryModel<Expr>&, const StagePlace&);
template MemoryModel<Num> memory_model<Num>(const PlanInput&);
template Items<Num> activation_items<Num>(const PlanInput&, const Derived&, const MemoryModel<Num>&,
                                          const StagePlace&);
template Items<Num> offloaded_items<Num>(const PlanInput&, const Derived&, const StagePlace&);
template Items<Num> stage_phase_items<Num>(const PlanInput&, const Derived&,
                                           const MemoryModel<Num>&, const StagePlace&, Phase);
template StageOf<Num> stage_memory<Num>(const PlanInput&, const Derived&, const MemoryModel<Num>&,
                                        const StagePlace&);

}  // namespace trainledger
