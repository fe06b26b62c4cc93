// Exact parameter counts of decoder-only transformers (shared/data/README.md formulas
// F-LLAMA, F-GPT, F-BLOOM, F-OPT, F-GEMMA2, F-MOE; documented in docs/formulas.md#params).
#include "trainledger/model.hpp"

#include <algorithm>

namespace trainledger {

bool is_gated(FfnAct a) { return a == FfnAct::swiglu || a == FfnAct::geglu; }

bool is_moe(const ModelSpec& m) { return m.experts > 0; }

bool is_mla(const ModelSpec& m) { return m.kv_lora_rank > 0; }

bool is_moe_layer(const ModelSpec& m, int i) {
  return is_moe(m) && i >= m.dense_layers && (i + 1) % std::max(1, m.moe_every) == 0;
}

int moe_layers(const ModelSpec& m) { return stage_moe_layers(m, m.layers, true); }

int stage_moe_layers(const ModelSpec& m, int layers, bool first) {
  if (!is_moe(m) || layers <= 0) return 0;
  const int every = std::max(1, m.moe_every);
  if (first) {
    // Layers dense_layers … layers − 1 whose number (from 1) is a multiple of `every`.
    const int from = std::min(m.dense_layers, layers);
    return layers / every - from / every;
  }
  return (layers + every - 1) / every;
}

int dense_mlp_layers(const ModelSpec& m) { return m.layers - moe_layers(m); }

int shared_ffn(const ModelSpec& m) {
  return m.shared_expert_ffn > 0 ? m.shared_expert_ffn : m.expert_ffn;
}

int head_dim(const ModelSpec& m) {
  if (is_mla(m)) return m.qk_nope_head_dim + m.qk_rope_head_dim;
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}

int v_head_dim(const ModelSpec& m) { return is_mla(m) ? m.v_head_dim : head_dim(m); }

namespace {

double norm_params(const ModelSpec& m, double width) {
  switch (m.norm) {
    case NormKind::rmsnorm:
      return width;
    case NormKind::layernorm:
      return 2.0 * width;
    case NormKind::none:
      break;
  }
  return 0;
}

}  // namespace

LayerParams layer_params(const ModelSpec& m) { return layer_params(m, is_moe(m)); }

LayerParams layer_params(const ModelSpec& m, bool moe) {
  LayerParams p;
  if (m.count_only) return p;
  const double h = m.hidden;
  const double d = head_dim(m);
  const double a = m.heads;
  const double k = m.kv_heads;
  if (is_mla(m)) {
    // DeepSeek-V2/V3 (modeling_deepseek.py): q = q_b(norm(q_a(x))) or q_proj(x); the latent
    // kv_a(x) = [c_kv (kv_lora_rank) | k_rope (qk_rope_head_dim)], norm(c_kv), kv_b(c_kv) =
    // [k_nope | v] per head; o over heads × v_head_dim.
    const double dv = m.v_head_dim;
    const double lq = m.q_lora_rank;
    const double lkv = m.kv_lora_rank;
    if (lq > 0) {
      p.latent_matrix += h * lq;
      p.attn_matrix += lq * a * d;
      p.norm += norm_params(m, lq);
    } else {
      p.attn_matrix += h * a * d;
    }
    p.latent_matrix += h * (lkv + m.qk_rope_head_dim);
    p.norm += norm_params(m, lkv);
    p.attn_matrix += lkv * a * (m.qk_nope_head_dim + dv) + a * dv * h;
  } else {
    p.kv_matrix = 2.0 * h * k * d;
    p.attn_matrix = h * a * d + p.kv_matrix + a * d * h;
    if (m.bias == BiasKind::qkv || m.bias == BiasKind::all) {
      p.col_bias += a * d;
      p.kv_bias = 2.0 * k * d;
    }
    if (m.bias == BiasKind::all) p.row_bias += h;
  }
  switch (m.qk_norm) {
    case QkNorm::head:
      p.norm += 2.0 * norm_params(m, d);
      break;
    case QkNorm::full:
      p.norm += norm_params(m, a * d) + norm_params(m, k * d);
      break;
    case QkNorm::none:
      break;
  }

  const double mats = is_gated(m.ffn_act) ? 3.0 : 2.0;
  if (moe) {
    p.expert_matrix = m.experts * mats * h * m.expert_ffn;
    p.shared_matrix = m.shared_experts * mats * h * shared_ffn(m);
    p.router = h * m.experts + (m.router_bias ? m.experts : 0.0) + (m.shared_expert_gate ? h : 0.0);
  } else {
    p.mlp_matrix = mats * h * m.ffn;
    if (m.bias == BiasKind::all || m.bias == BiasKind::mlp) {
      p.col_bias += (mats - 1.0) * m.ffn;
      p.row_bias += h;
    }
  }
  p.norm += m.norms_per_layer * norm_params(m, h);
  return p;
}

EdgeParams edge_params(const ModelSpec& m) {
  EdgeParams e;
  if (m.count_only) return e;
  const double h = m.hidden;
  e.embedding = static_cast<double>(m.vocab) * h;
  e.positions = static_cast<double>(m.position_embeddings) * h;
  e.embedding_norm = m.embedding_norm ? norm_params(m, h) : 0.0;
  e.final_norm = norm_params(m, h);
  e.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  e.lm_head_bias = m.lm_head_bias ? static_cast<double>(m.vocab) : 0.0;
  return e;
}

double mtp_extra_params(const ModelSpec& m) {
  const double h = m.hidden;
  return 2.0 * h * h + 3.0 * norm_params(m, h);
}

double total_params(const ModelSpec& m) {
  if (m.count_only) return m.params;
  const EdgeParams e = edge_params(m);
  return e.embedding + e.positions + e.embedding_norm + e.final_norm + e.lm_head + e.lm_head_bias +
         moe_layers(m) * layer_params(m, true).total() +
         dense_mlp_layers(m) * layer_params(m, false).total() +
         m.mtp_layers * (layer_params(m).total() + mtp_extra_params(m));
}

double active_params(const ModelSpec& m) {
  if (!is_moe(m)) return total_params(m);
  const double mats = is_gated(m.ffn_act) ? 3.0 : 2.0;
  const double inactive_experts = m.experts - m.experts_per_token;
  return total_params(m) -
         (moe_layers(m) + m.mtp_layers) * inactive_experts * mats * m.hidden * m.expert_ffn;
}

}  // namespace trainledger
