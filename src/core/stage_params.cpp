// Which parameters one GPU holds: tensor parallelism splits matrix weights, column-parallel
// biases and the vocabulary (Megatron-LM: Shoeybi et al. 2019, §3); norms, row-parallel biases
// and routers are replicated; experts are split over ep × etp (parallel.etp, tp by default);
// pipeline stages hold their own layers, the embedding on the first stage and the LM head on
// the last (docs/formulas.md#tp).
#include "stage_params.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace trainledger {

namespace {

// K/V heads held by one TP rank: kv_heads / tp, or one replicated head when tp > kv_heads.
double local_kv_heads(const ModelSpec& m, int tp) {
  return std::max(1.0, static_cast<double>(m.kv_heads) / tp);
}

double vocab_shard(const ModelSpec& m, int tp) {
  return std::ceil(static_cast<double>(m.vocab) / tp);
}

struct MatrixShape {
  double rows, cols;
};

// The GEMM weights of one layer as one TP rank holds them (q, k, v, o and two or three MLP
// matrices).
struct Matrices {
  std::array<MatrixShape, 12> list{};
  int count = 0;
  void push_back(MatrixShape s) { list[count++] = s; }
  const MatrixShape* begin() const { return list.data(); }
  const MatrixShape* end() const { return list.data() + count; }
};

// The GEMM weights of one layer as one TP rank holds them: attention (q, k, v, o; MLA: the
// down-projections, the up-projections, o) and the MLP's two or three matrices (a MoE layer:
// the local experts' and the shared experts').
Matrices layer_matrices(const ModelSpec& m, int tp, int etp, int ep, bool moe) {
  const double h = m.hidden;
  const double d = head_dim(m);
  const double q = m.heads * d / tp;
  Matrices out;
  if (is_mla(m)) {
    const double dv = m.v_head_dim;
    if (m.q_lora_rank > 0) {
      out.push_back({h, static_cast<double>(m.q_lora_rank)});
      out.push_back({static_cast<double>(m.q_lora_rank), q});
    } else {
      out.push_back({h, q});
    }
    out.push_back({h, static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim)});
    out.push_back({static_cast<double>(m.kv_lora_rank),
                   m.heads * (m.qk_nope_head_dim + dv) / static_cast<double>(tp)});
    out.push_back({m.heads * dv / static_cast<double>(tp), h});
  } else {
    const double kv = local_kv_heads(m, tp) * d;
    for (MatrixShape s :
         {MatrixShape{h, q}, MatrixShape{h, kv}, MatrixShape{h, kv}, MatrixShape{q, h}})
      out.push_back(s);
  }
  const int mats = is_gated(m.ffn_act) ? 3 : 2;
  auto mlp = [&](double f, double copies) {
    for (int i = 0; i < mats - 1; ++i) out.push_back({h * copies, f});
    out.push_back({f * copies, h});
  };
  if (!moe) {
    mlp(m.ffn / static_cast<double>(tp), 1);
    return out;
  }
  // The local experts as one stack per matrix (rows × copies), split over etp; the shared
  // experts are a dense MLP over tp.
  mlp(m.expert_ffn / static_cast<double>(etp), m.experts / static_cast<double>(ep));
  if (m.shared_experts > 0)
    mlp(m.shared_experts * static_cast<double>(shared_ffn(m)) / static_cast<double>(tp), 1);
  return out;
}

// LoRA: r·(in + out) per target; the TP-split side of each adapter is divided by tp.
double layer_adapters(const PlanInput& in, int tp) {
  const ModelSpec& m = in.model;
  const double r = in.training.lora_rank;
  const double h = m.hidden;
  const double d = head_dim(m);
  const double q = m.heads * d;
  const double kv = local_kv_heads(m, tp) * d * tp;
  const double f = m.ffn;
  double sum = 0;
  for (LoraTarget t : in.training.lora_targets) {
    switch (t) {
      case LoraTarget::q:
        sum += r * h + r * q / tp;
        break;
      case LoraTarget::k:
      case LoraTarget::v:
        sum += r * h + r * kv / tp;
        break;
      case LoraTarget::o:
        sum += r * q / tp + r * h;
        break;
      case LoraTarget::gate:
      case LoraTarget::up:
        sum += r * h + r * f / tp;
        break;
      case LoraTarget::down:
        sum += r * f / tp + r * h;
        break;
    }
  }
  return sum;
}

}  // namespace

StageParams stage_params(const PlanInput& in, int layers, bool first, bool last) {
  const ModelSpec& m = in.model;
  const int tp = in.parallel.tp;
  const int pp = in.parallel.pp;
  const int ep = in.parallel.ep;
  const int etp = expert_tp(in.parallel);
  StageParams s;
  if (m.count_only) {
    // No architecture: spread the count evenly over tp × pp (stated in a warning).
    s.dense = m.params / (static_cast<double>(tp) * pp);
    s.matrix = s.dense;
    return s;
  }
  // A MoE model's dense first layers lie on the first stage (a rule checks it); with
  // model.moe_every the dense layers between the MoE ones are counted in every stage.
  const int dense_here = layers - stage_moe_layers(m, layers, first);
  double vectors = 0;
  double factored = 0;
  // The last stage also holds the multi-token-prediction modules' layers.
  const int mtp = last ? m.mtp_layers : 0;
  for (const bool moe : {false, true}) {
    const int n = (moe ? layers - dense_here : dense_here) + (moe == is_moe(m) ? mtp : 0);
    if (n <= 0) continue;
    const LayerParams lp = layer_params(m, moe);
    const double kv_scale = local_kv_heads(m, tp) / std::max(1, m.kv_heads);
    const double q_o = lp.attn_matrix - lp.kv_matrix;
    const double layer_vectors =
        lp.col_bias / tp + lp.kv_bias * kv_scale + lp.row_bias + lp.router + lp.norm;
    const double layer_matrix = q_o / tp + lp.kv_matrix * kv_scale + lp.latent_matrix +
                                lp.mlp_matrix / tp + lp.shared_matrix / tp;
    const double layer_expert = lp.expert_matrix / (static_cast<double>(etp) * ep);
    s.dense += n * (layer_matrix + layer_vectors);
    s.expert += n * layer_expert;
    s.matrix += n * (layer_matrix + layer_expert);
    vectors += n * layer_vectors;
    double f = 0;
    for (const MatrixShape& ms : layer_matrices(m, tp, etp, ep, moe)) f += ms.rows + ms.cols;
    factored += n * f;
  }

  const EdgeParams e = edge_params(m);
  const double h = m.hidden;
  if (first) {
    const double emb = vocab_shard(m, tp) * h;
    s.dense += emb + e.positions + e.embedding_norm;
    factored += vocab_shard(m, tp) + h;
    if (e.positions > 0) factored += m.position_embeddings + h;
    vectors += e.embedding_norm;
  }
  if (last) {
    s.dense += e.final_norm;
    vectors += e.final_norm;
    if (mtp > 0) {
      // Each module's h × 2h projection (column-parallel, split by tp) and three norms.
      const double norms = mtp_extra_params(m) - 2.0 * h * h;
      s.dense += mtp * (2.0 * h * h / tp + norms);
      s.matrix += mtp * 2.0 * h * h / tp;
      vectors += mtp * norms;
      factored += mtp * (2.0 * h / tp + h);
      // The modules embed the shifted tokens: Megatron-Core builds the word embedding on the
      // stage that runs them (gpt_model.py: LanguageModelEmbedding when pre_process or
      // mtp_process), a second copy with its gradients when that is not the first stage.
      if (!first) {
        s.dense += vocab_shard(m, tp) * h;
        factored += vocab_shard(m, tp) + h;
      }
    }
    // Tied embeddings are one tensor when one stage holds both ends; with pp > 1 the last
    // stage keeps its own copy for the LM head (Megatron-LM's shared word embeddings).
    const bool head_copy = !m.tied_embeddings || (pp > 1);
    if (head_copy) {
      s.dense += vocab_shard(m, tp) * h;
      factored += vocab_shard(m, tp) + h;
    }
    // The head's bias is split with the vocabulary.
    const double head_bias = e.lm_head_bias > 0 ? vocab_shard(m, tp) : 0.0;
    s.dense += head_bias;
    vectors += head_bias;
  }
  s.adafactor = factored + vectors;
  if (in.training.finetune != Finetune::full) s.adapters = layers * layer_adapters(in, tp);
  return s;
}

double lora_adapter_params(const PlanInput& in) {
  if (in.training.finetune == Finetune::full || in.model.count_only) return 0;
  return in.model.layers * layer_adapters(in, 1);
}

}  // namespace trainledger
