#include "trainledger/plan_input.hpp"

#include <algorithm>

namespace trainledger {

std::string_view to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adamw:
      return "adamw";
    case Optimizer::adamw_8bit:
      return "adamw-8bit";
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::sgd_momentum:
      return "sgd-momentum";
    case Optimizer::lion:
      return "lion";
    case Optimizer::adafactor:
      return "adafactor";
  }
  return "?";
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::op:
      return "op";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::string_view to_string(Attention a) { return a == Attention::flash ? "flash" : "eager"; }

std::string_view to_string(Finetune f) {
  switch (f) {
    case Finetune::full:
      return "full";
    case Finetune::lora:
      return "lora";
    case Finetune::qlora:
      return "qlora";
  }
  return "?";
}

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::one_f_one_b:
      return "1f1b";
    case Schedule::gpipe:
      return "gpipe";
    case Schedule::interleaved:
      return "interleaved";
    case Schedule::zb_h1:
      return "zb-h1";
    case Schedule::dualpipev:
      return "dualpipev";
  }
  return "?";
}

std::string_view to_string(GradSync g) {
  return g == GradSync::every_micro_batch ? "every_micro_batch" : "last_micro_batch";
}

std::string_view to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::tuner:
      return "auto";
    case NcclAlgo::ring:
      return "ring";
    case NcclAlgo::tree:
      return "tree";
  }
  return "?";
}

std::string_view to_string(EpDispatch d) {
  switch (d) {
    case EpDispatch::nccl:
      return "nccl";
    case EpDispatch::deepep:
      return "deepep";
    case EpDispatch::allgather:
      return "allgather";
  }
  return "nccl";
}

std::string_view to_string(Recipe r) {
  switch (r) {
    case Recipe::none:
      return "none";
    case Recipe::delayed:
      return "delayed";
    case Recipe::tensorwise:
      return "tensorwise";
    case Recipe::rowwise:
      return "rowwise";
    case Recipe::blockwise:
      return "blockwise";
    case Recipe::mxfp8:
      return "mxfp8";
    case Recipe::nvfp4:
      return "nvfp4";
  }
  return "none";
}

std::string_view precision_name(const TrainingSpec& t) {
  return t.recipe == Recipe::nvfp4 ? "fp4" : to_string(t.precision);
}

std::string_view to_string(Offload o) {
  switch (o) {
    case Offload::none:
      return "none";
    case Offload::optimizer:
      return "optimizer";
    case Offload::optimizer_params:
      return "optimizer+params";
  }
  return "?";
}

std::string_view to_string(LoraTarget t) {
  switch (t) {
    case LoraTarget::q:
      return "q_proj";
    case LoraTarget::k:
      return "k_proj";
    case LoraTarget::v:
      return "v_proj";
    case LoraTarget::o:
      return "o_proj";
    case LoraTarget::gate:
      return "gate_proj";
    case LoraTarget::up:
      return "up_proj";
    case LoraTarget::down:
      return "down_proj";
  }
  return "?";
}

std::string_view to_string(FfnAct a) {
  switch (a) {
    case FfnAct::swiglu:
      return "swiglu";
    case FfnAct::geglu:
      return "geglu";
    case FfnAct::gelu:
      return "gelu";
    case FfnAct::relu:
      return "relu";
  }
  return "?";
}

std::string_view to_string(NormKind n) {
  switch (n) {
    case NormKind::rmsnorm:
      return "rmsnorm";
    case NormKind::layernorm:
      return "layernorm";
    case NormKind::none:
      break;
  }
  return "none";
}

std::string_view to_string(BiasKind b) {
  switch (b) {
    case BiasKind::none:
      return "none";
    case BiasKind::qkv:
      return "qkv";
    case BiasKind::mlp:
      return "mlp";
    case BiasKind::all:
      return "all";
  }
  return "?";
}

std::string_view to_string(QkNorm q) {
  switch (q) {
    case QkNorm::none:
      return "none";
    case QkNorm::head:
      return "head";
    case QkNorm::full:
      return "full";
  }
  return "?";
}

std::string_view to_string(Loss l) {
  switch (l) {
    case Loss::standard:
      return "standard";
    case Loss::chunked:
      return "chunked";
    case Loss::fused:
      return "fused";
  }
  return "?";
}

std::string_view to_string(OptimizerImpl o) {
  switch (o) {
    case OptimizerImpl::foreach:
      return "foreach";
    case OptimizerImpl::for_loop:
      return "for-loop";
    case OptimizerImpl::fused:
      return "fused";
  }
  return "?";
}

std::string_view to_string(Framework f) {
  switch (f) {
    case Framework::generic:
      return "generic";
    case Framework::pytorch:
      return "pytorch";
    case Framework::hf:
      return "hf";
    case Framework::megatron:
      return "megatron";
    case Framework::deepspeed:
      return "deepspeed";
  }
  return "?";
}

std::string_view to_string(RlAlgorithm a) {
  switch (a) {
    case RlAlgorithm::grpo:
      return "grpo";
    case RlAlgorithm::ppo:
      return "ppo";
    case RlAlgorithm::dapo:
      return "dapo";
    case RlAlgorithm::rloo:
      return "rloo";
    case RlAlgorithm::dpo:
      return "dpo";
  }
  return "grpo";
}

std::string_view to_string(RlPlacement p) {
  return p == RlPlacement::split ? "split" : "colocated";
}

std::string_view to_string(RlEngine e) { return e == RlEngine::sglang ? "sglang" : "vllm"; }

std::string_view to_string(RlSleep s) {
  switch (s) {
    case RlSleep::offload:
      return "offload";
    case RlSleep::discard:
      return "discard";
    case RlSleep::none:
      return "none";
  }
  return "offload";
}

std::string_view to_string(RlOffloadCopy c) {
  switch (c) {
    case RlOffloadCopy::pageable:
      return "pageable";
    case RlOffloadCopy::pinned_weights:
      return "pinned_weights";
    case RlOffloadCopy::pinned:
      return "pinned";
  }
  return "pageable";
}

std::string_view to_string(RlFrozen f) {
  switch (f) {
    case RlFrozen::resident:
      return "resident";
    case RlFrozen::offload:
      return "offload";
    case RlFrozen::swap:
      return "swap";
  }
  return "resident";
}

std::string_view to_string(CheckpointFormat f) {
  return f == CheckpointFormat::sharded ? "sharded" : "gathered";
}

double peak_of(const PeakFlops& f, DType t) {
  switch (t) {
    case DType::fp32:
      return f.fp32;
    case DType::bf16:
      return f.bf16;
    case DType::fp16:
      return f.fp16;
    case DType::fp8:
      return f.fp8;
    case DType::int8:
      return 0;
  }
  return 0;
}

Source Provenance::of(std::string_view key) const {
  auto it = std::lower_bound(m_keys.begin(), m_keys.end(), key,
                             [](const auto& e, std::string_view k) { return e.first < k; });
  return it != m_keys.end() && it->first == key ? it->second : Source::default_value;
}

void Provenance::set(std::string_view key, Source s) {
  auto it = std::lower_bound(m_keys.begin(), m_keys.end(), key,
                             [](const auto& e, std::string_view k) { return e.first < k; });
  if (it != m_keys.end() && it->first == key)
    it->second = s;
  else
    m_keys.insert(it, {std::string(key), s});
}

namespace {
bool fsdp_pipeline(Framework f, int zero, int pp) {
  return (f == Framework::pytorch || f == Framework::hf) && zero >= 3 && pp > 1;
}
}  // namespace

GradSync default_grad_sync(Framework f, int zero, int pp) {
  return zero >= 2 && !fsdp_pipeline(f, zero, pp) ? GradSync::every_micro_batch
                                                  : GradSync::last_micro_batch;
}

bool default_reshard_after_forward(Framework f, int zero, int pp) {
  return !fsdp_pipeline(f, zero, pp);
}

bool fsdp_splits_ends(const PlanInput& in) {
  return in.parallel.fsdp_split_root && !in.model.tied_embeddings &&
         in.parallel.reshard_after_forward;
}

int expert_tp(const ParallelSpec& p) { return p.etp > 0 ? p.etp : p.tp; }

int expert_dp(const ParallelSpec& p) {
  const long long stage = static_cast<long long>(p.tp) * p.cp * p.dp;
  const long long expert = static_cast<long long>(expert_tp(p)) * std::max(1, p.ep);
  return static_cast<int>(std::max(1LL, stage / std::max(1LL, expert)));
}

double default_fragmentation(bool expandable_segments) {
  // 0.3 fit on the dev sources that ran without expandable segments, 0.1 on torchtitan's runs
  // with them (docs/formulas.md#overheads).
  return expandable_segments ? 0.1 : 0.3;
}

}  // namespace trainledger
