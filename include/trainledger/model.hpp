// Model architecture and exact parameter counts.
#pragma once

#include <cstdint>
#include <string>

namespace trainledger {

enum class FfnAct { swiglu, geglu, gelu, relu };
// rmsnorm (a weight), layernorm (weight and bias), none: a LayerNorm without parameters (OLMo).
enum class NormKind { rmsnorm, layernorm, none };
// Which linear layers carry biases: none (Llama), q/k/v only (Qwen2), the MLP's only (GPT-J),
// every linear (GPT-2).
enum class BiasKind { none, qkv, mlp, all };
// Norms on the queries and keys: none, per head (Qwen3, Gemma 3: a head_dim weight each) or over
// all heads (OLMo 2: weights of heads × head_dim and kv_heads × head_dim).
enum class QkNorm { none, head, full };

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
  int shared_expert_ffn = 0;        // width of one shared expert; 0: expert_ffn
  bool shared_expert_gate = false;  // Qwen2-MoE: a sigmoid gate (h × 1) on the shared expert
  bool router_bias = false;         // DeepSeek-V3: a score-correction bias per routed expert
  int dense_layers = 0;             // MoE: the first layers have a dense MLP of width ffn
  // MoE: routed experts on every moe_every-th layer (layers k, 2k, … counting from 1; Llama 4
  // Maverick's interleave_moe_layer_step, Qwen2-MoE's decoder_sparse_step); the others have a
  // dense MLP of width ffn.
  int moe_every = 1;
  // Multi-token prediction (DeepSeek-V3's num_nextn_predict_layers): each module is one more
  // transformer layer (with experts when the model has them), an h × 2h projection of the
  // normed hidden state and next token's embedding, and three norms, on the last pipeline
  // stage; it shares the embedding and LM head and adds a pass of the head and its loss.
  int mtp_layers = 0;
  QkNorm qk_norm = QkNorm::none;
  bool lm_head_bias = false;  // GPT-J, Phi-2
  // Sliding-window attention: local layers attend to the last `sliding_window` keys; every
  // `global_every`-th layer attends to the whole sequence (0: every layer is local).
  int sliding_window = 0;
  int global_every = 0;
  // Chunked attention (Llama 4's attention_chunk_size): local layers attend within blocks of
  // `attention_chunk` tokens; every `global_every`-th layer attends to the whole sequence.
  int attention_chunk = 0;
  // Multi-head latent attention (DeepSeek-V2/V3; kv_lora_rank > 0): queries through a rank
  // q_lora_rank bottleneck (0: a full h × heads·(nope + rope) matrix), keys and values from a
  // shared latent of kv_lora_rank plus one rope key of qk_rope_head_dim per token.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

bool is_gated(FfnAct a);
bool is_moe(const ModelSpec& m);
bool is_mla(const ModelSpec& m);
// Layers with routed experts (all but the dense first ones) and with a dense MLP.
int moe_layers(const ModelSpec& m);
int dense_mlp_layers(const ModelSpec& m);
// Whether layer `i` (from 0) has routed experts, and how many of a pipeline stage's `layers`
// do: the first stage counts from layer 0; a later stage starts on a multiple of moe_every (a
// rule), and a lone layer elsewhere is taken as the MoE one (the larger; temporaries size one
// layer that way).
bool is_moe_layer(const ModelSpec& m, int i);
int stage_moe_layers(const ModelSpec& m, int layers, bool first);
int shared_ffn(const ModelSpec& m);
// Parameters of one multi-token-prediction module beyond its transformer layer: the h × 2h
// projection and three norms (DeepSeek-V3 eh_proj, enorm, hnorm, shared_head.norm).
double mtp_extra_params(const ModelSpec& m);

// Parameters of one transformer layer, split by how tensor parallelism treats them.
struct LayerParams {
  double attn_matrix = 0;    // q, k, v, o weights split by tp (MLA: the up-projections and o)
  double kv_matrix = 0;      // the k and v part of attn_matrix (replicated when tp > kv_heads)
  double latent_matrix = 0;  // MLA's down-projections to the latents: replicated under tp
  double shared_matrix = 0;  // MoE shared experts: split by tp, not by ep
  double col_bias = 0;       // q and MLP-in biases: split by tp (column-parallel)
  double kv_bias = 0;        // k and v biases: split like kv_matrix
  double row_bias = 0;       // o and MLP-out biases: replicated under tp (row-parallel)
  double mlp_matrix = 0;     // dense MLP weights (0 for MoE layers)
  double expert_matrix = 0;  // all experts' weights of the layer (MoE)
  double router = 0;         // MoE router, replicated
  double norm = 0;           // norm weights and biases, replicated
  double total() const {
    return attn_matrix + latent_matrix + col_bias + kv_bias + row_bias + mlp_matrix +
           shared_matrix + expert_matrix + router + norm;
  }
};

// Parameters outside the transformer layers.
struct EdgeParams {
  double embedding = 0;       // V × h word embedding
  double positions = 0;       // P × h learned positions
  double embedding_norm = 0;  // BLOOM
  double final_norm = 0;
  double lm_head = 0;       // 0 when tied
  double lm_head_bias = 0;  // V (GPT-J, Phi-2)
};

// One layer: with routed experts (`moe`) or with a dense MLP (a dense model's layers, a MoE
// model's first dense_layers).
LayerParams layer_params(const ModelSpec& m, bool moe);
LayerParams layer_params(const ModelSpec& m);  // the model's typical layer (MoE when it is one)
EdgeParams edge_params(const ModelSpec& m);
// Exact total parameter count (for a count-only model, its given count).
double total_params(const ModelSpec& m);
// Parameters used per token (MoE: only the active experts).
double active_params(const ModelSpec& m);
// The query/key head dimension (MLA: nope + rope) and the value head dimension.
int head_dim(const ModelSpec& m);
int v_head_dim(const ModelSpec& m);

}  // namespace trainledger
