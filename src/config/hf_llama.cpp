// config.json readers of the Llama family and its MoE and MLA descendants (LlamaConfig,
// MistralConfig, MixtralConfig, Qwen2Config, Qwen2MoeConfig, Qwen3Config, Qwen3MoeConfig,
// DeepseekV2Config, DeepseekV3Config, Llama4TextConfig, GemmaConfig, Gemma2Config,
// Gemma3TextConfig): key names per the transformers configuration classes and modeling code.
#include <fmt/format.h>

#include "hf_cfg.hpp"

namespace trainledger::config::hf {

// The MLP activation from hidden_act / hidden_activation: gated for the Llama family (silu →
// swiglu, gelu → geglu).
void gated_act(Cfg& c, const char* fallback) {
  std::string act = c.text("hidden_activation");
  if (act.empty()) act = c.text("hidden_act");
  if (act.empty()) act = fallback;
  if (act == "silu" || act == "swish") {
    c.fix("ffn_act", string_value("swiglu"));
  } else if (act.rfind("gelu", 0) == 0) {
    c.fix("ffn_act", string_value("geglu"));
  } else {
    c.refuse("hidden_act", "a gated MLP with this activation is not modelled (silu, gelu)");
  }
}

// The keys most configuration classes name alike (LlamaConfig and its descendants).
void shape_keys(Cfg& c) {
  c.need("layers", {"num_hidden_layers"});
  c.need("hidden", {"hidden_size"});
  c.need("heads", {"num_attention_heads"});
  c.need("ffn", {"intermediate_size"});
  c.need("vocab", {"vocab_size"});
}

// The Llama-style decoder most types share: RMSNorm, a gated MLP, rotary positions.
void llama_like(Cfg& c) {
  shape_keys(c);
  c.opt("kv_heads", {"num_key_value_heads"});
  c.opt("head_dim", {"head_dim"});
  c.opt("tied_embeddings", {"tie_word_embeddings"});
  c.fix("norm", string_value("rmsnorm"));
  gated_act(c, "silu");
  if (c.flag("attention_bias"))
    c.refuse("attention_bias", "biases on q, k, v and o are not modelled for this model type");
  if (c.flag("mlp_bias")) c.refuse("mlp_bias", "biases on the MLP are not modelled here");
}

namespace {

void mixture(Cfg& c, std::initializer_list<const char*> experts, const char* expert_ffn) {
  c.need("experts", experts);
  c.need("experts_per_token", {"num_experts_per_tok"});
  c.need("expert_ffn", {expert_ffn});
  // Qwen2-MoE: layer i has experts when (i + 1) % decoder_sparse_step == 0, model.moe_every.
  if (const Value* v = c.get({"decoder_sparse_step"});
      v && !(v->type == Value::Type::integer && v->integer == 1))
    c.set("moe_every", *v, v->origin);
  if (const Value* v = c.get({"mlp_only_layers"}); v && matters(*v))
    c.refuse("mlp_only_layers", "a list of dense layers among the MoE layers is not modelled");
}

// Llama 4's layer schedules (Llama4TextConfig): MoE layers every interleave_moe_layer_step-th
// (an explicit moe_layers list must be that pattern), and chunked attention on every layer but
// the NoPE ones (no_rope_layers 0, by default every no_rope_layer_interval-th), which attend
// to the whole sequence.
void llama4_schedules(Cfg& c) {
  const std::int64_t layers = c.number("num_hidden_layers", 0);
  std::int64_t step = 1;
  if (const Value* v = c.get({"interleave_moe_layer_step"})) {
    c.set("moe_every", *v, v->origin);
    if (v->type == Value::Type::integer) step = v->integer;
  }
  if (const Value* list = c.get({"moe_layers"}); list && list->type == Value::Type::array) {
    bool pattern = step > 0;
    std::vector<std::int64_t> expected;
    for (std::int64_t i = step - 1; pattern && i < layers; i += step) expected.push_back(i);
    pattern = pattern && list->items.size() == expected.size();
    for (std::size_t i = 0; pattern && i < expected.size(); ++i)
      pattern =
          list->items[i].type == Value::Type::integer && list->items[i].integer == expected[i];
    if (!pattern)
      c.refuse("moe_layers",
               "MoE layers other than every interleave_moe_layer_step-th are not modelled");
  }
  const Value* chunk = c.length("attention_chunk_size");
  if (!chunk) return;
  c.set("attention_chunk", *chunk, chunk->origin);
  std::int64_t every = c.number("no_rope_layer_interval", 4);
  if (const Value* nope = c.get({"no_rope_layers"});
      nope && nope->type == Value::Type::array && !nope->items.empty()) {
    // 1: a RoPE layer with chunked attention; 0: a NoPE layer over the whole sequence.
    every = 0;
    for (std::size_t i = 0; i < nope->items.size(); ++i)
      if (nope->items[i].type == Value::Type::integer && nope->items[i].integer == 0) {
        every = static_cast<std::int64_t>(i) + 1;
        break;
      }
    bool periodic = true;
    for (std::size_t i = 0; periodic && i < nope->items.size(); ++i) {
      const bool global = every > 0 && (static_cast<std::int64_t>(i) + 1) % every == 0;
      periodic =
          nope->items[i].type == Value::Type::integer && nope->items[i].integer == (global ? 0 : 1);
    }
    if (!periodic) {
      c.refuse("no_rope_layers", "full-attention layers other than every n-th are not modelled");
      return;
    }
  }
  if (every > 0) c.fix("global_every", integer_value(every));
}

}  // namespace

// Sliding-window attention: the window (null or absent: none) and which layers are global.
void window(Cfg& c, std::int64_t global_every) {
  const Value* w = c.length("sliding_window");
  if (!w) return;
  c.set("sliding_window", *w, w->origin);
  if (global_every > 0) c.fix("global_every", integer_value(global_every));
}

bool read_llama_family(Cfg& c, std::vector<std::string>& warnings) {
  const std::string& t = c.type();
  if (c.flag("use_sliding_window"))
    c.refuse("use_sliding_window",
             "a sliding window on some layers (max_window_layers) is not modelled");
  if (t == "llama" || t == "mistral" || t == "phi3") {
    llama_like(c);
    window(c, 0);
  } else if (t == "mixtral") {
    llama_like(c);
    mixture(c, {"num_local_experts"}, "intermediate_size");
  } else if (t == "qwen2") {
    llama_like(c);
    c.fix("bias", string_value("qkv"));
  } else if (t == "qwen2_moe") {
    llama_like(c);
    c.fix("bias", string_value("qkv"));
    mixture(c, {"num_experts"}, "moe_intermediate_size");
    if (c.opt("shared_expert_ffn", {"shared_expert_intermediate_size"})) {
      c.fix("shared_experts", integer_value(1));
      c.fix("shared_expert_gate", boolean_value(true));
    }
  } else if (t == "qwen3") {
    llama_like(c);
    c.fix("qk_norm", string_value("head"));
  } else if (t == "qwen3_moe") {
    llama_like(c);
    c.fix("qk_norm", string_value("head"));
    mixture(c, {"num_experts"}, "moe_intermediate_size");
  } else if (t == "deepseek_v2" || t == "deepseek_v3") {
    llama_like(c);
    c.opt("q_lora_rank", {"q_lora_rank"});
    c.need("kv_lora_rank", {"kv_lora_rank"});
    c.need("qk_nope_head_dim", {"qk_nope_head_dim"});
    c.need("qk_rope_head_dim", {"qk_rope_head_dim"});
    c.need("v_head_dim", {"v_head_dim"});
    if (c.get({"n_routed_experts"})) {
      c.need("experts", {"n_routed_experts"});
      c.need("experts_per_token", {"num_experts_per_tok"});
      c.need("expert_ffn", {"moe_intermediate_size"});
      c.opt("shared_experts", {"n_shared_experts"});
      c.opt("dense_layers", {"first_k_dense_replace"});
      if (c.number("moe_layer_freq", 1) != 1)
        c.refuse("moe_layer_freq", "MoE layers interleaved with dense ones are not modelled");
      // DeepSeek-V3's aux-loss-free routing adds e_score_correction_bias per expert.
      if (c.text("topk_method") == "noaux_tc") c.fix("router_bias", boolean_value(true));
    }
    if (const std::int64_t mtp = c.number("num_nextn_predict_layers", 0); mtp > 0)
      warnings.push_back(fmt::format(
          "{}: num_nextn_predict_layers = {}: the multi-token-prediction module is not counted "
          "(DeepSeek's published counts exclude it too); to train it, set model.mtp_layers = "
          "{} (one more MoE layer, an h × 2h projection and a pass of the LM head per module)",
          c.origin().file, mtp, mtp));
  } else if (t == "llama4_text") {
    // Llama4TextConfig / modeling_llama4.py: routed experts of width intermediate_size and one
    // shared expert of the same width; the dense layers' MLP is intermediate_size_mlp; the
    // router is h × experts without bias; use_qk_norm is an L2 norm without weights.
    c.need("layers", {"num_hidden_layers"});
    c.need("hidden", {"hidden_size"});
    c.need("heads", {"num_attention_heads"});
    c.need("vocab", {"vocab_size"});
    c.opt("kv_heads", {"num_key_value_heads"});
    c.opt("head_dim", {"head_dim"});
    c.need("ffn", {"intermediate_size_mlp"});
    c.need("experts", {"num_local_experts"});
    c.need("experts_per_token", {"num_experts_per_tok"});
    c.need("expert_ffn", {"intermediate_size"});
    c.fix("shared_experts", integer_value(1));
    c.fix("tied_embeddings", boolean_value(c.flag("tie_word_embeddings", false)));
    c.fix("norm", string_value("rmsnorm"));
    gated_act(c, "silu");
    c.get({"use_qk_norm"});
    if (c.flag("attention_bias"))
      c.refuse("attention_bias", "biases on q, k, v and o are not modelled for this model type");
    llama4_schedules(c);
  } else if (t == "gemma3_text") {
    // Gemma3TextConfig's defaults fill what a config.json leaves out (Gemma 3 4B-27B write
    // only what differs from them).
    c.need_or("layers", "num_hidden_layers", 26);
    c.need_or("hidden", "hidden_size", 2304);
    c.need_or("heads", "num_attention_heads", 8);
    c.need_or("kv_heads", "num_key_value_heads", 4);
    c.need_or("head_dim", "head_dim", 256);
    c.need_or("ffn", "intermediate_size", 9216);
    c.need_or("vocab", "vocab_size", 262208);
    c.fix("tied_embeddings", boolean_value(true));
    c.fix("norm", string_value("rmsnorm"));
    gated_act(c, "gelu_pytorch_tanh");
    c.fix("norms_per_layer", integer_value(4));
    c.fix("qk_norm", string_value("head"));
    // Five local layers to one global (sliding_window_pattern 6; layer_types in newer files).
    std::int64_t every = c.number("sliding_window_pattern", 0);
    if (const Value* types = c.get({"layer_types"}); types && types->type == Value::Type::array) {
      for (std::size_t i = 0; i < types->items.size(); ++i)
        if (types->items[i].type == Value::Type::string &&
            types->items[i].string == "full_attention") {
          every = static_cast<std::int64_t>(i) + 1;
          break;
        }
    }
    window(c, every > 0 ? every : 6);
    if (c.flag("attention_bias"))
      c.refuse("attention_bias", "biases on q, k, v and o are not modelled for this model type");
  } else if (t == "gemma" || t == "gemma2") {
    llama_like(c);
    c.fix("tied_embeddings", boolean_value(true));
    if (t == "gemma2") {
      c.fix("norms_per_layer", integer_value(4));  // pre and post norms
      window(c, 2);                                // local and global layers alternate
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace trainledger::config::hf
