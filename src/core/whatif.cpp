// What-if in the core: typed changes applied to PlanInput, validated by the plan's rules and
// evaluated by the numbers-only path (docs/cli.md#levers, docs/cli.md#check).
#include "trainledger/whatif.hpp"

#include <algorithm>

#include "trainledger/numbers.hpp"
#include "trainledger/rules.hpp"

namespace trainledger {

namespace {

template <typename E>
std::int64_t as_int(E e) {
  return static_cast<std::int64_t>(e);
}

template <typename E>
std::string enum_text(std::int64_t v) {
  return std::string(to_string(static_cast<E>(v)));
}

bool given(const PlanInput& in, std::string_view key) {
  const Source s = in.provenance.of(key);
  return s != Source::default_value && s != Source::derived;
}

}  // namespace

std::string_view key_of(Knob k) {
  switch (k) {
    case Knob::global_batch:
      return "training.global_batch";
    case Knob::micro_batch:
      return "training.micro_batch";
    case Knob::recompute:
      return "training.recompute";
    case Knob::attention:
      return "training.attention";
    case Knob::loss:
      return "training.loss";
    case Knob::optimizer:
      return "training.optimizer";
    case Knob::tp:
      return "parallel.tp";
    case Knob::dp:
      return "parallel.dp";
    case Knob::sequence_parallel:
      return "parallel.sequence_parallel";
    case Knob::zero:
      return "parallel.zero";
    case Knob::schedule:
      return "parallel.schedule";
    case Knob::virtual_stages:
      return "parallel.virtual_stages";
    case Knob::offload:
      return "parallel.offload";
    case Knob::gradient_as_bucket_view:
      return "parallel.gradient_as_bucket_view";
    case Knob::grad_sync:
      return "parallel.grad_sync";
    case Knob::nccl_channels:
      return "cluster.nccl_channels";
    case Knob::overlap_tp:
      return "parallel.overlap_tp";
    case Knob::overlap_dp:
      return "parallel.overlap_dp";
    case Knob::overlap_param_gather:
      return "parallel.overlap_param_gather";
    case Knob::expandable_segments:
      return "training.expandable_segments";
    case Knob::cuda_graphs:
      return "training.cuda_graphs";
    case Knob::optimizer_impl:
      return "training.optimizer_impl";
    case Knob::precision:
      return "training.precision";
    case Knob::etp:
      return "parallel.etp";
  }
  return "?";
}

std::string knob_text(Knob k, std::int64_t v) {
  switch (k) {
    case Knob::recompute:
      return enum_text<Recompute>(v);
    case Knob::attention:
      return enum_text<Attention>(v);
    case Knob::loss:
      return enum_text<Loss>(v);
    case Knob::optimizer:
      return enum_text<Optimizer>(v);
    case Knob::schedule:
      return enum_text<Schedule>(v);
    case Knob::offload:
      return enum_text<Offload>(v);
    case Knob::grad_sync:
      return enum_text<GradSync>(v);
    case Knob::optimizer_impl:
      return enum_text<OptimizerImpl>(v);
    case Knob::precision:
      return v == 2 ? "fp4" : v == 1 ? "fp8" : "bf16";
    case Knob::cuda_graphs:
    case Knob::sequence_parallel:
    case Knob::gradient_as_bucket_view:
    case Knob::overlap_tp:
    case Knob::overlap_dp:
    case Knob::overlap_param_gather:
    case Knob::expandable_segments:
      return v != 0 ? "true" : "false";
    default:
      return std::to_string(v);
  }
}

bool knob_is_count(Knob k) {
  switch (k) {
    case Knob::global_batch:
    case Knob::micro_batch:
    case Knob::tp:
    case Knob::dp:
    case Knob::zero:
    case Knob::nccl_channels:
    case Knob::etp:
      return true;
    default:
      return false;
  }
}

std::int64_t knob_value(const PlanInput& in, Knob k) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  switch (k) {
    case Knob::global_batch:
      return t.global_batch > 0 ? t.global_batch : t.micro_batch * p.dp;
    case Knob::micro_batch:
      return t.micro_batch;
    case Knob::recompute:
      return as_int(t.recompute);
    case Knob::attention:
      return as_int(t.attention);
    case Knob::loss:
      return as_int(t.loss);
    case Knob::optimizer:
      return as_int(t.optimizer);
    case Knob::tp:
      return p.tp;
    case Knob::dp:
      return p.dp;
    case Knob::sequence_parallel:
      return p.sequence_parallel ? 1 : 0;
    case Knob::zero:
      return p.zero;
    case Knob::schedule:
      return as_int(p.schedule);
    case Knob::virtual_stages:
      return p.virtual_stages;
    case Knob::offload:
      return as_int(p.offload);
    case Knob::gradient_as_bucket_view:
      return p.gradient_as_bucket_view ? 1 : 0;
    case Knob::grad_sync:
      return as_int(p.grad_sync);
    case Knob::nccl_channels:
      return in.cluster.nccl_channels;
    case Knob::overlap_tp:
      return p.overlap_tp ? 1 : 0;
    case Knob::overlap_dp:
      return p.overlap_dp ? 1 : 0;
    case Knob::overlap_param_gather:
      return p.overlap_param_gather ? 1 : 0;
    case Knob::expandable_segments:
      return t.expandable_segments ? 1 : 0;
    case Knob::cuda_graphs:
      return t.cuda_graphs ? 1 : 0;
    case Knob::optimizer_impl:
      return as_int(t.optimizer_impl);
    case Knob::precision:
      return t.recipe == Recipe::nvfp4 ? 2 : t.precision == DType::fp8 ? 1 : 0;
    case Knob::etp:
      return expert_tp(p);
  }
  return 0;
}

Change& Change::set(const PlanInput& base, Knob k, std::int64_t to) {
  if (m_size < static_cast<int>(m_edits.size()))
    m_edits[m_size++] = Edit{k, knob_value(base, k), to};
  return *this;
}

PlanInput apply(const PlanInput& in, const Change& c) {
  PlanInput out = in;
  TrainingSpec& t = out.training;
  ParallelSpec& p = out.parallel;
  // The global batch is held: a plan that never gave one keeps the batch it had.
  if (t.global_batch <= 0) t.global_batch = t.micro_batch * p.dp;
  for (const Edit& e : c) {
    const std::int64_t v = e.to;
    switch (e.knob) {
      case Knob::global_batch:
        t.global_batch = v;
        break;
      case Knob::micro_batch:
        t.micro_batch = v;
        break;
      case Knob::recompute:
        t.recompute = static_cast<Recompute>(v);
        break;
      case Knob::attention:
        t.attention = static_cast<Attention>(v);
        break;
      case Knob::loss:
        t.loss = static_cast<Loss>(v);
        break;
      case Knob::optimizer:
        t.optimizer = static_cast<Optimizer>(v);
        break;
      case Knob::tp:
        p.tp = static_cast<int>(v);
        break;
      case Knob::dp:
        p.dp = static_cast<int>(v);
        break;
      case Knob::sequence_parallel:
        p.sequence_parallel = v != 0;
        break;
      case Knob::zero:
        p.zero = static_cast<int>(v);
        break;
      case Knob::schedule:
        p.schedule = static_cast<Schedule>(v);
        break;
      case Knob::virtual_stages:
        p.virtual_stages = static_cast<int>(v);
        break;
      case Knob::offload:
        p.offload = static_cast<Offload>(v);
        break;
      case Knob::gradient_as_bucket_view:
        p.gradient_as_bucket_view = v != 0;
        break;
      case Knob::grad_sync:
        p.grad_sync = static_cast<GradSync>(v);
        break;
      case Knob::nccl_channels:
        out.cluster.nccl_channels = static_cast<int>(v);
        break;
      case Knob::overlap_tp:
        p.overlap_tp = v != 0;
        break;
      case Knob::overlap_dp:
        p.overlap_dp = v != 0;
        break;
      case Knob::overlap_param_gather:
        p.overlap_param_gather = v != 0;
        break;
      case Knob::expandable_segments:
        t.expandable_segments = v != 0;
        break;
      case Knob::cuda_graphs:
        t.cuda_graphs = v != 0;
        break;
      case Knob::optimizer_impl:
        t.optimizer_impl = static_cast<OptimizerImpl>(v);
        break;
      case Knob::precision:
        // As the plan file's precision: fp8 keeps an fp8 recipe already chosen.
        t.precision = v == 0 ? DType::bf16 : DType::fp8;
        if (v == 2)
          t.recipe = Recipe::nvfp4;
        else if (v == 0)
          t.recipe = Recipe::none;
        else if (t.recipe == Recipe::none || t.recipe == Recipe::nvfp4)
          t.recipe = Recipe::tensorwise;
        break;
      case Knob::etp:
        p.etp = static_cast<int>(v);
        break;
    }
    out.provenance.set(key_of(e.knob), Source::change);
  }
  // What follows from the stack and the layout, unless the plan or a change gave it.
  const Framework f = out.training.framework;
  if (!given(out, "parallel.grad_sync")) p.grad_sync = default_grad_sync(f, p.zero, p.pp);
  if (!given(out, "parallel.reshard_after_forward"))
    p.reshard_after_forward = default_reshard_after_forward(f, p.zero, p.pp);
  if (!given(out, "cluster.fragmentation"))
    out.cluster.fragmentation = default_fragmentation(t.expandable_segments);
  return out;
}

std::optional<PlanInput> apply_valid(const PlanInput& in, const Change& c) {
  PlanInput out = apply(in, c);
  if (!check_rules(out).empty()) return std::nullopt;
  return out;
}

}  // namespace trainledger
