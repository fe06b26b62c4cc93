// Persistent training state per GPU (docs/formulas.md#state; docs/formulas.md#state).
// ZeRO over a shard group of d ranks (Rajbhandari et al. 2020, §5): stage 1 shards optimizer
// state and master weights, stage 2 also gradients, stage 3 also parameters.
#include "state.hpp"

#include <fmt/format.h>

#include <string>

#include "formula.hpp"
#include "recipe.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_zero =
    "Rajbhandari et al. 2020, ZeRO, §3.1 (mixed-precision Adam: 2 + 2 + 12 B/param) and §5 "
    "(stages 1-3 shard optimizer state, gradients, parameters)";
constexpr const char* k_src_8bit =
    "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization; bitsandbytes keeps one "
    "fp32 absmax per 256-element block per state";
constexpr const char* k_src_lion = "Chen et al. 2023, Lion: one momentum buffer per parameter";
constexpr const char* k_src_adafactor =
    "Shazeer & Stern 2018, Adafactor §3: factored second moment (rows + cols per matrix), "
    "no first moment (beta1 = 0)";
constexpr const char* k_src_sgd = "PyTorch torch.optim.SGD: one momentum_buffer per parameter";
constexpr const char* k_src_qlora =
    "Dettmers et al. 2023, QLoRA §2: NF4 weights in blocks of 64 with an fp32 absmax; double "
    "quantization stores it in 8 bits with an fp32 constant per 256 blocks";
constexpr const char* k_src_lora = "Hu et al. 2021, LoRA §4.1: adapters r·(d_in + d_out)";
constexpr const char* k_src_fp8_param_gather =
    "Megatron-LM --fp8-param-gather (arguments.py; megatron/core/fp8_utils.py, "
    "transformer_engine.pytorch.fp8_model_init): the GEMM weights are created as FP8 tensors, "
    "no bf16 copy; the distributed optimizer keeps the fp32 master and gathers FP8";
constexpr const char* k_src_fp8 =
    "NVIDIA Transformer Engine (module/base.py quantize_weight, _fp8_workspaces): the GEMM "
    "weights are quantized on the first micro-batch and cached for the step, row-wise and "
    "column-wise: per-tensor FP8 2 B/param on Hopper (data and transpose), 1 B where non-TN FP8 "
    "GEMMs exist (utils.py is_non_tn_fp8_gemm_supported: compute capability 10.x); blockwise "
    "2 B, MXFP8 2 × (1 + 1/32) B, NVFP4 2 × (0.5 + 1/16) B (docs/formulas.md#recipes)";

constexpr const char* k_src_fsdp_master =
    "PyTorch torch/distributed/fsdp/_fully_shard/_fsdp_param.py (FSDPParam: the sharded "
    "parameter keeps its original fp32 dtype, MixedPrecisionPolicy.param_dtype applies to the "
    "all-gathered unsharded copy only) and _flat_param.py (FSDP1 FlatParameter: _local_shard "
    "fp32, _mp_shard/_full_param_padded transient)";

struct Holding {
  double dense = 0;
  double expert = 0;
};

struct Shards {
  int dense = 1;
  int expert = 1;
};

std::string dtype_label(DType t) { return std::string(to_string(t)); }

// "N params / d shard ranks [+ E expert params / d_e expert shard ranks]"
template <typename V>
V held(const Holding& h, std::string_view key, std::string_view what, bool sharded,
       const Shards& s) {
  V dense = V::term(key, h.dense, what);
  if (sharded && s.dense > 1) dense = dense / V::term("shard_ranks", s.dense, "shard ranks");
  if (h.expert <= 0) return dense;
  V ex = V::term(Text("expert_", key), h.expert, Text("expert ", what));
  if (sharded && s.expert > 1)
    ex = ex / V::term("expert_shard_ranks", s.expert, "expert shard ranks");
  return dense + ex;
}

template <typename V>
V bytes_per_param(double b, std::string_view what = {}) {
  return V::term("bytes_per_param", b, Text("B/param", what.empty() ? "" : " ", what));
}

// Whether ZeRO shards the item at the plan's stage.
bool sharded(ItemId id, int zero) {
  const int from = info(id).zero_stage;
  return from > 0 && zero >= from;
}

// "Adam m (fp32, ZeRO-1 shard)": what the item is, its format, and whether ZeRO shards it.
std::string label(const std::string& what, const std::string& detail, int zero, ItemId id) {
  std::string inside = detail;
  if (sharded(id, zero))
    inside += (inside.empty() ? "" : ", ") + std::string("ZeRO-") + std::to_string(zero) + " shard";
  return inside.empty() ? what : what + " (" + inside + ")";
}

struct Context {
  const PlanInput& in;
  Shards shards;
  Holding all;        // every parameter the stage holds
  Holding trainable;  // those that receive gradients
  int zero = 0;
};

template <typename V>
void add_params(const Context& c, const StageParams& sp, Items<V>& out) {
  const TrainingSpec& t = c.in.training;
  const bool shard = sharded(ItemId::params, c.zero);
  const double pb = param_bytes(t);
  if (t.finetune == Finetune::full) {
    const DType stored = t.precision == DType::fp8 ? DType::bf16 : t.precision;
    if (fp32_shard_is_master(c.in)) {
      // FSDP1/FSDP2 with a mixed-precision policy keep the sharded parameter in fp32 (the
      // master) and gather 16-bit units on the fly: no 16-bit copy of the trained weights
      // persists (16 B/param with AdamW, not 18). Frozen parameters keep their dtype.
      const Holding frozen{c.all.dense - c.trainable.dense, c.all.expert - c.trainable.expert};
      V e = bytes_per_param<V>(pb) *
            held<V>(frozen, "frozen_params", "frozen params", shard, c.shards);
      out.push_back(make(
          ItemId::params,
          [&] {
            return label("16-bit weights: none kept (the fp32 shard is the master)",
                         dtype_label(stored), c.zero, ItemId::params);
          },
          Unit::bytes, e, k_src_fsdp_master));
      return;
    }
    if (c.in.parallel.fp8_param_gather && t.precision == DType::fp8 && !shard) {
      // Megatron-LM --fp8-param-gather: the GEMM weights are Transformer Engine FP8 tensors
      // (the params.fp8 item); only the rest (embedding, LM head, norms) keeps 16 bits.
      V e = bytes_per_param<V>(pb) *
            (held<V>(c.all, "params", "params", shard, c.shards) -
             V::term("matrix_params", sp.matrix, "GEMM weights, kept in FP8 only"));
      out.push_back(make(
          ItemId::params,
          [&] {
            return label("weights outside the GEMMs (the GEMM weights in FP8 only)",
                         dtype_label(stored), c.zero, ItemId::params);
          },
          Unit::bytes, e, k_src_fp8_param_gather));
      return;
    }
    V e = bytes_per_param<V>(pb) * held<V>(c.all, "params", "params", shard, c.shards);
    out.push_back(make(
        ItemId::params,
        [&] { return label("weights", dtype_label(stored), c.zero, ItemId::params); }, Unit::bytes,
        e, k_src_zero));
    return;
  }
  // LoRA / QLoRA: a frozen base (not trained, not in the checkpoint) and the trainable
  // adapters; QLoRA keeps the layer matrices in NF4.
  const bool qlora = t.finetune == Finetune::qlora;
  const double quantized = qlora ? sp.matrix : 0;
  Holding base = c.all;
  if (qlora) base = Holding{c.all.dense + c.all.expert - quantized, 0};
  const V frozen =
      bytes_per_param<V>(pb) * held<V>(base, "frozen_params", "frozen params", shard, c.shards);
  out.push_back(make(
      ItemId::params_frozen,
      [&] {
        const std::string what =
            qlora ? "frozen 16-bit parts (embeddings, norms, head)" : "frozen base weights";
        return label(what, dtype_label(t.precision), c.zero, ItemId::params_frozen);
      },
      Unit::bytes, frozen, k_src_lora));
  Holding adapters{sp.adapters, 0};
  const V e = bytes_per_param<V>(pb) *
              held<V>(adapters, "adapter_params", "adapter params", shard, c.shards);
  out.push_back(make(
      ItemId::params,
      [&] { return label("LoRA adapters", dtype_label(t.precision), c.zero, ItemId::params); },
      Unit::bytes, e, k_src_lora));
  if (!qlora) return;

  const bool nf4_shard = sharded(ItemId::params_nf4, c.zero);
  Holding q{quantized, 0};
  V nf4 = V::term("bytes_per_param", 0.5, "B/param (4-bit)") *
          held<V>(q, "quantized_params", "NF4 params", nf4_shard, c.shards);
  out.push_back(
      make(ItemId::params_nf4, "NF4 base weights (layer matrices)", Unit::bytes, nf4, k_src_qlora));
  V consts = t.double_quant
                 ? (V::term("absmax_bytes", 1, "B") / V::term("block", 64, "params/block") +
                    V::term("outer_bytes", 4, "B") /
                        V::term("outer_block", 64 * 256, "params/outer block"))
                 : V::term("absmax_bytes", 4, "B") / V::term("block", 64, "params/block");
  V ce = consts * held<V>(q, "quantized_params", "NF4 params", nf4_shard, c.shards);
  out.push_back(make(ItemId::params_nf4_constants,
                     t.double_quant ? "NF4 block constants (double-quantized)"
                                    : "NF4 block constants (fp32 absmax per 64)",
                     Unit::bytes, ce, k_src_qlora));
}

template <typename V>
void add_grads(const Context& c, Items<V>& out) {
  const TrainingSpec& t = c.in.training;
  V e = bytes_per_param<V>(dtype_bytes(t.grad_dtype)) *
        held<V>(c.trainable, "trainable_params", "trainable params", sharded(ItemId::grads, c.zero),
                c.shards);
  out.push_back(make(
      ItemId::grads,
      [&] { return label("gradients", dtype_label(t.grad_dtype), c.zero, ItemId::grads); },
      Unit::bytes, e, k_src_zero));
}

template <typename V>
void add_optimizer(const Context& c, const StageParams& sp, Items<V>& out) {
  const TrainingSpec& t = c.in.training;
  // Every optimizer item shards from the same ZeRO stage (the catalogue's optimizer_state).
  const bool shard = sharded(ItemId::optimizer_state, c.zero);
  auto name = [&c](ItemId id, const char* what, std::string_view detail) {
    return [&c, id, what, detail] { return label(what, std::string(detail), c.zero, id); };
  };
  const V count = held<V>(c.trainable, "trainable_params", "trainable params", shard, c.shards);
  const double ob = dtype_bytes(t.optimizer_dtype);
  const std::string_view od = to_string(t.optimizer_dtype);
  switch (t.optimizer) {
    case Optimizer::adamw:
      out.push_back(make(ItemId::optimizer_m, name(ItemId::optimizer_m, "Adam m", od), Unit::bytes,
                         bytes_per_param<V>(ob) * count, k_src_zero));
      out.push_back(make(ItemId::optimizer_v, name(ItemId::optimizer_v, "Adam v", od), Unit::bytes,
                         bytes_per_param<V>(ob) * count, k_src_zero));
      return;
    case Optimizer::adamw_8bit: {
      V b = bytes_per_param<V>(1, "(8-bit)") +
            V::term("absmax_bytes", 4, "B") / V::term("block", 256, "params/block");
      out.push_back(make(ItemId::optimizer_m, name(ItemId::optimizer_m, "Adam m", "8-bit blocks"),
                         Unit::bytes, b * count, k_src_8bit));
      out.push_back(make(ItemId::optimizer_v, name(ItemId::optimizer_v, "Adam v", "8-bit blocks"),
                         Unit::bytes, b * count, k_src_8bit));
      return;
    }
    case Optimizer::sgd:
      return;  // plain SGD keeps no state
    case Optimizer::sgd_momentum:
      out.push_back(make(ItemId::optimizer_state, name(ItemId::optimizer_state, "SGD momentum", od),
                         Unit::bytes, bytes_per_param<V>(ob) * count, k_src_sgd));
      return;
    case Optimizer::lion:
      out.push_back(make(ItemId::optimizer_state,
                         name(ItemId::optimizer_state, "Lion momentum", od), Unit::bytes,
                         bytes_per_param<V>(ob) * count, k_src_lion));
      return;
    case Optimizer::adafactor: {
      // Factored state of the trainable share of the stage's matrices.
      const double share =
          c.all.dense + c.all.expert > 0
              ? (c.trainable.dense + c.trainable.expert) / (c.all.dense + c.all.expert)
              : 0;
      V n = V::term("factored_elements", sp.adafactor * share, "elements (rows + cols per matrix)");
      if (shard && c.shards.dense > 1)
        n = n / V::term("shard_ranks", c.shards.dense, "shard ranks");
      out.push_back(make(ItemId::optimizer_state,
                         name(ItemId::optimizer_state, "Adafactor factored v", "fp32"), Unit::bytes,
                         V::term("bytes_per_element", 4, "B/element") * n, k_src_adafactor));
      return;
    }
  }
}

template <typename V>
void add_master(const Context& c, Items<V>& out) {
  const TrainingSpec& t = c.in.training;
  const int mb = master_bytes(t);
  V e = bytes_per_param<V>(mb) * held<V>(c.trainable, "trainable_params", "trainable params",
                                         sharded(ItemId::master, c.zero), c.shards);
  out.push_back(make(
      ItemId::master,
      [&]() -> std::string {
        if (mb != 0) return label("master weights", "fp32", c.zero, ItemId::master);
        return t.precision == DType::fp32 ? "no master copy: fp32 weights are the master"
                                          : "no master copy (master_weights = false)";
      },
      Unit::bytes, e, k_src_zero));
}

template <typename V>
void add_fp8_copies(const Context& c, const StageParams& sp, Items<V>& out) {
  if (c.in.training.precision != DType::fp8 || c.zero >= 3) return;
  const Recipe r = c.in.training.recipe;
  V e = bytes_per_param<V>(quantized_weight_bytes(c.in),
                           r == Recipe::nvfp4 ? "(nvfp4, both usages)" : "(fp8, both usages)") *
        V::term("matrix_params", sp.matrix, "GEMM weights");
  out.push_back(make(
      ItemId::params_fp8,
      [&] {
        return fmt::format("{} copies of the GEMM weights ({})", r == Recipe::nvfp4 ? "FP4" : "FP8",
                           to_string(r));
      },
      Unit::bytes, e, k_src_fp8, Kind::estimated));
}

}  // namespace

bool fp32_shard_is_master(const PlanInput& in) {
  const Framework f = in.training.framework;
  return (f == Framework::pytorch || f == Framework::hf) && in.parallel.zero >= 3 &&
         master_bytes(in.training) > 0;
}

int loss_vocab_split(const PlanInput& in) {
  return in.training.framework == Framework::hf ? 1 : in.parallel.tp;
}

double gathered_bytes(const PlanInput& in, double matrix_share) {
  const double b = param_bytes(in.training);
  if (!in.parallel.fp8_all_gather && !in.parallel.fp8_param_gather) return b;
  return b - (b - gathered_weight_bytes(in)) * matrix_share;
}

int param_bytes(const TrainingSpec& t) {
  // FP8 training keeps bf16 weights; the FP8 copies are their own item.
  return t.precision == DType::fp8 ? 2 : dtype_bytes(t.precision);
}

int master_bytes(const TrainingSpec& t) {
  return (t.precision != DType::fp32 && t.master_weights) ? 4 : 0;
}

double optimizer_bytes_per_param(const TrainingSpec& t) {
  switch (t.optimizer) {
    case Optimizer::adamw:
      return 2.0 * dtype_bytes(t.optimizer_dtype);
    case Optimizer::adamw_8bit:
      return 2.0 * (1 + 4.0 / 256);
    case Optimizer::sgd_momentum:
    case Optimizer::lion:
      return dtype_bytes(t.optimizer_dtype);
    case Optimizer::sgd:
    case Optimizer::adafactor:  // factored: negligible against the weights
      return 0;
  }
  return 0;
}

template <typename V>
V checkpoint_size(const PlanInput& in, const Derived& d) {
  const TrainingSpec& t = in.training;
  // LoRA and QLoRA save the adapters and their optimizer state; the frozen base is the
  // pretrained model's own files (PEFT's save_pretrained, torchtune's adapter checkpoints).
  if (t.finetune != Finetune::full)
    return V::term("trainable_params", d.trainable_params, "adapter params") *
           (V::term("param_bytes", param_bytes(t), "B (weights)") +
            V::term("master_bytes", master_bytes(t), "B (master)") +
            V::term("optimizer_bytes", optimizer_bytes_per_param(t), "B (optimizer state)"));
  // PyTorch AMP/FSDP keep the weights in fp32 (the master) and cast 16-bit copies on the
  // fly, so a checkpoint holds 12 B per trained parameter with AdamW (torchtitan's DCP
  // checkpoints: model + optimizer state dicts); the others save both copies.
  const bool cast_copies =
      (t.framework == Framework::pytorch || t.framework == Framework::hf) && master_bytes(t) > 0;
  const double saved_weights = cast_copies ? d.params - d.trainable_params : d.params;
  return V::term("params", saved_weights,
                 cast_copies ? "frozen params (trained weights are the master)" : "params") *
             V::term("param_bytes", param_bytes(t), "B (weights)") +
         V::term("trainable_params", d.trainable_params, "trainable params") *
             (V::term("master_bytes", master_bytes(t), "B (master)") +
              V::term("optimizer_bytes", optimizer_bytes_per_param(t), "B (optimizer state)"));
}

template <typename V>
Items<V> state_items(const PlanInput& in, const Derived& derived, const StageParams& sp) {
  const int d = derived.shard_group;
  // The experts' shards: the dense shard group's ranks times tp (a stage's ranks) over the
  // ranks one expert spans (etp × ep); d / ep with etp = tp.
  const long long expert_shard =
      static_cast<long long>(d) * in.parallel.tp /
      (static_cast<long long>(expert_tp(in.parallel)) * std::max(1, in.parallel.ep));
  Context c{in, Shards{d, static_cast<int>(std::max(1LL, expert_shard))}, {}, {}, in.parallel.zero};
  c.all = Holding{sp.dense, sp.expert};
  if (in.training.finetune == Finetune::full) {
    const double share = derived.params > 0 ? derived.trainable_params / derived.params : 1.0;
    c.trainable = Holding{sp.dense * share, sp.expert * share};
  } else {
    c.trainable = Holding{sp.adapters, 0};
  }
  Items<V> out;
  add_params<V>(c, sp, out);
  add_fp8_copies<V>(c, sp, out);
  add_grads<V>(c, out);
  add_optimizer<V>(c, sp, out);
  add_master<V>(c, out);
  return out;
}

template Expr checkpoint_size<Expr>(const PlanInput&, const Derived&);
template Num checkpoint_size<Num>(const PlanInput&, const Derived&);
template Items<Expr> state_items<Expr>(const PlanInput&, const Derived&, const StageParams&);
template Items<Num> state_items<Num>(const PlanInput&, const Derived&, const StageParams&);

}  // namespace trainledger
