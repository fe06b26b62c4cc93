// [model] and [cluster] GPU settings → ModelSpec and GpuSpec.
#include <cmath>

#include "build.hpp"
#include "reader.hpp"

namespace trainledger::config {

namespace {

const char* const k_arch_keys[] = {"layers", "hidden", "heads", "ffn", "vocab"};

void check_shape(const Reader& in, const ModelSpec& m) {
  if (m.kv_heads > m.heads) {
    in.error("model.kv_heads", fmt::format("model.kv_heads ({}) must not exceed model.heads ({})",
                                           m.kv_heads, m.heads));
  } else if (m.heads % m.kv_heads != 0) {
    in.error("model.kv_heads",
             fmt::format("model.kv_heads ({}) must divide model.heads ({})", m.kv_heads, m.heads));
  }
  if (m.head_dim == 0 && m.hidden % m.heads != 0) {
    in.error("model.heads",
             fmt::format("model.heads ({}) must divide model.hidden ({}), or give model.head_dim",
                         m.heads, m.hidden));
  }
  if (m.experts > 0) {
    if (m.experts_per_token < 1 || m.experts_per_token > m.experts)
      in.error("model.experts_per_token",
               fmt::format("model.experts_per_token ({}) must be between 1 and model.experts ({})",
                           m.experts_per_token, m.experts));
    if (m.expert_ffn < 1)
      in.error("model.expert_ffn", "model.expert_ffn must be given for a MoE model (experts > 0)");
    if (m.dense_layers >= m.layers)
      in.error("model.dense_layers",
               fmt::format("model.dense_layers ({}) must be fewer than model.layers ({})",
                           m.dense_layers, m.layers));
    if (m.layers > 0 && moe_layers(m) == 0)
      in.error("model.moe_every",
               fmt::format("no layer has routed experts: model.moe_every ({}) and "
                           "model.dense_layers ({}) leave none of the {} layers",
                           m.moe_every, m.dense_layers, m.layers));
    if (m.shared_experts == 0 && (m.shared_expert_ffn > 0 || m.shared_expert_gate))
      in.error(m.shared_expert_gate ? "model.shared_expert_gate" : "model.shared_expert_ffn",
               "a shared expert's width or gate needs model.shared_experts > 0");
  } else if (m.experts_per_token > 0 || m.expert_ffn > 0 || m.shared_experts > 0 ||
             m.dense_layers > 0 || m.router_bias || m.shared_expert_ffn > 0 ||
             m.shared_expert_gate || m.moe_every > 1) {
    in.error("model.experts",
             "model.experts must be > 0 when experts_per_token, expert_ffn, shared_experts, "
             "shared_expert_ffn, shared_expert_gate, dense_layers, moe_every or router_bias are "
             "given");
  }
  if (m.kv_lora_rank > 0) {
    if (m.qk_rope_head_dim < 1 || m.v_head_dim < 1 || m.qk_nope_head_dim < 1)
      in.error("model.kv_lora_rank",
               "multi-head latent attention (model.kv_lora_rank > 0) needs model.qk_nope_head_dim, "
               "qk_rope_head_dim and v_head_dim");
  } else if (m.q_lora_rank > 0 || m.qk_nope_head_dim > 0 || m.qk_rope_head_dim > 0 ||
             m.v_head_dim > 0) {
    in.error("model.kv_lora_rank",
             "model.q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim describe "
             "multi-head latent attention: give model.kv_lora_rank too");
  }
  const double n = total_params(m);
  if (!(n <= 1e15)) {
    in.error("model.hidden",
             fmt::format("the model has {:.3g} parameters: out of range (at most 1e15)", n));
  }
}

}  // namespace

ModelSpec build_model(const Resolution& r, std::vector<Diagnostic>& errors) {
  Reader in(r, errors);
  ModelSpec m;
  m.name = in.text("model.name", in.text("model.preset"));
  if (in.has("model.params")) {
    for (const char* k : k_arch_keys) {
      if (in.has(std::string("model.") + k)) {
        in.error("model.params",
                 fmt::format("model.params describes a count-only model, but model.{} gives an "
                             "architecture; keep one of them",
                             k));
        return m;
      }
    }
    m.count_only = true;
    m.params = in.number("model.params");
    if (m.name.empty()) m.name = fmt::format("{:.3g}-parameter model", m.params);
    return m;
  }
  std::string missing;
  for (const char* k : k_arch_keys)
    if (!in.has(std::string("model.") + k))
      missing += (missing.empty() ? "" : ", ") + std::string(k);
  if (!missing.empty()) {
    in.section_error("model", "model: missing " + missing +
                                  " (give them, or model.preset, model.hf_config or model.params)");
    return m;
  }
  m.layers = static_cast<int>(in.integer("model.layers"));
  m.hidden = static_cast<int>(in.integer("model.hidden"));
  m.heads = static_cast<int>(in.integer("model.heads"));
  m.kv_heads = static_cast<int>(in.integer("model.kv_heads", m.heads));
  m.head_dim = static_cast<int>(in.integer("model.head_dim", 0));
  m.ffn = static_cast<int>(in.integer("model.ffn"));
  m.ffn_act = from_string(in.text("model.ffn_act"), FfnAct::swiglu);
  m.vocab = in.integer("model.vocab");
  m.tied_embeddings = in.boolean("model.tied_embeddings");
  m.norm = from_string(in.text("model.norm"), NormKind::rmsnorm);
  m.bias = from_string(in.text("model.bias"), BiasKind::none);
  m.position_embeddings = in.integer("model.position_embeddings");
  m.embedding_norm = in.boolean("model.embedding_norm");
  m.norms_per_layer = static_cast<int>(in.integer("model.norms_per_layer", 2));
  m.experts = static_cast<int>(in.integer("model.experts"));
  m.experts_per_token = static_cast<int>(in.integer("model.experts_per_token"));
  m.expert_ffn = static_cast<int>(in.integer("model.expert_ffn"));
  m.shared_experts = static_cast<int>(in.integer("model.shared_experts"));
  m.shared_expert_ffn = static_cast<int>(in.integer("model.shared_expert_ffn"));
  m.shared_expert_gate = in.boolean("model.shared_expert_gate");
  m.router_bias = in.boolean("model.router_bias");
  m.dense_layers = static_cast<int>(in.integer("model.dense_layers"));
  m.moe_every = static_cast<int>(in.integer("model.moe_every", 1));
  m.mtp_layers = static_cast<int>(in.integer("model.mtp_layers"));
  m.qk_norm = from_string(in.text("model.qk_norm"), QkNorm::none);
  m.lm_head_bias = in.boolean("model.lm_head_bias");
  m.sliding_window = static_cast<int>(in.integer("model.sliding_window"));
  m.global_every = static_cast<int>(in.integer("model.global_every"));
  m.attention_chunk = static_cast<int>(in.integer("model.attention_chunk"));
  if (m.global_every > 0 && m.sliding_window == 0 && m.attention_chunk == 0)
    in.error("model.global_every",
             "model.global_every needs model.sliding_window or model.attention_chunk");
  if (m.sliding_window > 0 && m.attention_chunk > 0)
    in.error("model.attention_chunk",
             "model.attention_chunk and model.sliding_window are two kinds of local attention: "
             "give one");
  m.q_lora_rank = static_cast<int>(in.integer("model.q_lora_rank"));
  m.kv_lora_rank = static_cast<int>(in.integer("model.kv_lora_rank"));
  m.qk_nope_head_dim = static_cast<int>(in.integer("model.qk_nope_head_dim"));
  m.qk_rope_head_dim = static_cast<int>(in.integer("model.qk_rope_head_dim"));
  m.v_head_dim = static_cast<int>(in.integer("model.v_head_dim"));
  // MLA has no grouped key/value heads: every head has its own keys and values.
  if (m.kv_lora_rank > 0) m.kv_heads = m.heads;
  if (m.name.empty()) m.name = "custom model";
  check_shape(in, m);
  return m;
}

GpuSpec build_gpu(const Resolution& r, std::vector<Diagnostic>& errors) {
  Reader in(r, errors);
  GpuSpec g;
  g.name = in.text("cluster.gpu_name", in.text("cluster.gpu", "custom GPU"));
  if (!in.has("cluster.gpu_memory")) {
    in.error("cluster.gpu",
             "cluster: no GPU memory: give cluster.gpu (a preset, see `trainledger gpus`) or "
             "cluster.gpu_memory");
    return g;
  }
  g.memory_bytes = static_cast<std::int64_t>(std::llround(in.number("cluster.gpu_memory")));
  if (in.has("cluster.peak_flops")) g.peak_flops = in.get<PeakFlops>("cluster.peak_flops");
  g.memory_bandwidth = in.number("cluster.memory_bandwidth");
  g.sms = static_cast<int>(in.integer("cluster.gpu_sms", 0));
  return g;
}

}  // namespace trainledger::config
