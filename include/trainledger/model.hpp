// Model architecture and exact parameter counts.
#pragma once

#include <cstdint>
#include <string>

namespace trainledger {

enum class FfnAct { swiglu, geglu, gelu, relu };
enum class NormKind { rmsnorm, layernorm };
// Which linear layers carry biases: none (Llama), q/k/v only (Qwen2), every linear (GPT-2).
enum class BiasKind { none, qkv, all };

struct ModelSpec {
  std::string name;
  // A count-only model knows its parameter count but not its shape: the state ledger works,
  // activations and FLOPs do not.
  bool count_only = false;
  double params = 0;  // count-only models

  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;  // hidden / heads unless the config sets it (Gemma 2)
  int ffn = 0;
  FfnAct ffn_act = FfnAct::swiglu;
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  NormKind norm = NormKind::rmsnorm;
  BiasKind bias = BiasKind::none;
  std::int64_t position_embeddings = 0;  // rows of a learned position table; 0 for RoPE/ALiBi
  bool embedding_norm = false;           // BLOOM's LayerNorm on the word embeddings
  int norms_per_layer = 2;               // Gemma 2 has four
  // Mixture of experts (Mixtral style): every layer's MLP is `experts` experts of width
  // `expert_ffn`, `experts_per_token` of them active, plus a router h × experts.
  int experts = 0;
  int experts_per_token = 0;
  int expert_ffn = 0;
  int shared_experts = 0;
};

bool is_gated(FfnAct a);
bool is_moe(const ModelSpec& m);

// Parameters of one transformer layer, split by how tensor parallelism treats them.
struct LayerParams {
  double attn_matrix = 0;    // q, k, v, o weights
  double kv_matrix = 0;      // the k and v part of attn_matrix (replicated when tp > kv_heads)
  double col_bias = 0;       // q and MLP-in biases: split by tp (column-parallel)
  double kv_bias = 0;        // k and v biases: split like kv_matrix
  double row_bias = 0;       // o and MLP-out biases: replicated under tp (row-parallel)
  double mlp_matrix = 0;     // dense MLP weights (0 for MoE layers)
  double expert_matrix = 0;  // all experts' weights of the layer (MoE)
  double router = 0;         // MoE router, replicated
  double norm = 0;           // norm weights and biases, replicated
  double total() const {
    return attn_matrix + col_bias + kv_bias + row_bias + mlp_matrix + expert_matrix + router + norm;
  }
};

// Parameters outside the transformer layers.
struct EdgeParams {
  double embedding = 0;       // V × h word embedding
  double positions = 0;       // P × h learned positions
  double embedding_norm = 0;  // BLOOM
  double final_norm = 0;
  double lm_head = 0;  // 0 when tied
};

LayerParams layer_params(const ModelSpec& m);
EdgeParams edge_params(const ModelSpec& m);
// Exact total parameter count (for a count-only model, its given count).
double total_params(const ModelSpec& m);
// Parameters used per token (MoE: only the active experts).
double active_params(const ModelSpec& m);
int head_dim(const ModelSpec& m);

}  // namespace trainledger
