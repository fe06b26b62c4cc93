// Exact parameter counts of decoder-only transformers (shared/data/README.md formulas
// F-LLAMA, F-GPT, F-BLOOM, F-OPT, F-GEMMA2, F-MOE; documented in docs/formulas.md#params).
#include "trainledger/model.hpp"

namespace trainledger {

bool is_gated(FfnAct a) { return a == FfnAct::swiglu || a == FfnAct::geglu; }

bool is_moe(const ModelSpec& m) { return m.experts > 0; }

int head_dim(const ModelSpec& m) {
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}

LayerParams layer_params(const ModelSpec& m) {
  LayerParams p;
  if (m.count_only) return p;
  const double h = m.hidden;
  const double d = head_dim(m);
  const double a = m.heads;
  const double k = m.kv_heads;
  p.kv_matrix = 2.0 * h * k * d;
  p.attn_matrix = h * a * d + p.kv_matrix + a * d * h;
  if (m.bias != BiasKind::none) {
    p.col_bias += a * d;
    p.kv_bias = 2.0 * k * d;
  }
  if (m.bias == BiasKind::all) p.row_bias += h;

  const double mats = is_gated(m.ffn_act) ? 3.0 : 2.0;
  if (is_moe(m)) {
    const double experts = m.experts + m.shared_experts;
    p.expert_matrix = experts * mats * h * m.expert_ffn;
    p.router = h * m.experts;
  } else {
    p.mlp_matrix = mats * h * m.ffn;
    if (m.bias == BiasKind::all) {
      p.col_bias += (mats - 1.0) * m.ffn;
      p.row_bias += h;
    }
  }
  const double per_norm = m.norm == NormKind::layernorm ? 2.0 * h : h;
  p.norm = m.norms_per_layer * per_norm;
  return p;
}

EdgeParams edge_params(const ModelSpec& m) {
  EdgeParams e;
  if (m.count_only) return e;
  const double h = m.hidden;
  const double per_norm = m.norm == NormKind::layernorm ? 2.0 * h : h;
  e.embedding = static_cast<double>(m.vocab) * h;
  e.positions = static_cast<double>(m.position_embeddings) * h;
  e.embedding_norm = m.embedding_norm ? per_norm : 0.0;
  e.final_norm = per_norm;
  e.lm_head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  return e;
}

double total_params(const ModelSpec& m) {
  if (m.count_only) return m.params;
  const EdgeParams e = edge_params(m);
  return e.embedding + e.positions + e.embedding_norm + e.final_norm + e.lm_head +
         m.layers * layer_params(m).total();
}

double active_params(const ModelSpec& m) {
  if (!is_moe(m)) return total_params(m);
  const double mats = is_gated(m.ffn_act) ? 3.0 : 2.0;
  const double inactive_experts = m.experts - m.experts_per_token;
  return total_params(m) - m.layers * inactive_experts * mats * m.hidden * m.expert_ffn;
}

}  // namespace trainledger
