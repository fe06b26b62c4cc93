// Hugging Face config.json → model settings. Key names per model_type follow the transformers
// configuration classes and modeling code (LlamaConfig, MistralConfig, MixtralConfig,
// Qwen2Config, Qwen2MoeConfig, Qwen3Config, Qwen3MoeConfig, DeepseekV2Config,
// DeepseekV3Config, GemmaConfig, Gemma2Config, Gemma3TextConfig, PhiConfig, Phi3Config,
// Starcoder2Config, FalconConfig, GPTJConfig, GPTNeoXConfig, OlmoConfig, Olmo2Config,
// BloomConfig, GPT2Config, Llama4TextConfig); docs/config.md#hf_config. A model_type not listed, or
// a key that changes the architecture in a way the reader does not model, is an error naming it.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "files.hpp"
#include "resolve.hpp"

namespace trainledger::config {

namespace {

const Value* field(const Value& doc, const std::string& key) {
  for (const auto& [k, v] : doc.fields)
    if (k == key && v.type != Value::Type::other) return &v;
  return nullptr;
}

// Keys that change the architecture: present with a value that matters and not read by the
// model_type's reader, they are an error (never a silent dense Llama).
const char* const k_architecture_keys[] = {"num_experts",
                                           "num_local_experts",
                                           "n_routed_experts",
                                           "moe_intermediate_size",
                                           "num_experts_per_tok",
                                           "n_shared_experts",
                                           "shared_expert_intermediate_size",
                                           "kv_lora_rank",
                                           "q_lora_rank",
                                           "qk_nope_head_dim",
                                           "qk_rope_head_dim",
                                           "v_head_dim",
                                           "first_k_dense_replace",
                                           "moe_layer_freq",
                                           "decoder_sparse_step",
                                           "mlp_only_layers",
                                           "interleave_moe_layer_step",
                                           "moe_layers",
                                           "intermediate_size_mlp",
                                           "parallel_attn",
                                           "new_decoder_architecture",
                                           "multi_query",
                                           "attention_bias",
                                           "mlp_bias",
                                           "use_bias",
                                           "bias",
                                           "qk_layernorm",
                                           "use_qk_norm",
                                           "num_kv_heads",
                                           "n_head_kv",
                                           "num_nextn_predict_layers",
                                           "alibi",
                                           "moe_every_k_layers"};

// Whether a value means "the feature is on": true, a non-zero number, a non-empty list or text.
bool matters(const Value& v) {
  switch (v.type) {
    case Value::Type::boolean:
      return v.boolean;
    case Value::Type::integer:
      return v.integer != 0;
    case Value::Type::floating:
      return v.floating != 0;
    case Value::Type::string:
      return !v.string.empty();
    case Value::Type::array:
      return !v.items.empty();
    case Value::Type::table:
      return !v.fields.empty();
    case Value::Type::other:
      break;
  }
  return false;
}

// One config.json (or its text_config) read into model settings.
class Cfg {
 public:
  Cfg(const Value& doc, std::string path, std::string type, SettingMap& out,
      std::vector<Diagnostic>& errors)
      : m_doc(doc),
        m_path(std::move(path)),
        m_type(std::move(type)),
        m_out(out),
        m_errors(errors) {}

  const std::string& type() const { return m_type; }
  Origin origin() const { return Origin{m_path, 0, 0, "hf_config"}; }

  // The first of `keys` present (marked read), or nullptr.
  const Value* get(std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      m_read.insert(k);
      if (const Value* v = field(m_doc, k)) return v;
    }
    return nullptr;
  }
  // model.<key> from the first of `keys`; an error when none is there.
  void need(const char* key, std::initializer_list<const char*> keys) {
    if (const Value* v = get(keys)) {
      set(key, *v, v->origin);
    } else {
      m_missing.push_back(*keys.begin());
    }
  }
  // model.<key> from the first of `keys` when one is there.
  bool opt(const char* key, std::initializer_list<const char*> keys) {
    if (const Value* v = get(keys)) {
      set(key, *v, v->origin);
      return true;
    }
    return false;
  }
  // model.<key> from `json_key`, else the configuration class's default (what transformers
  // reads from the same file).
  void need_or(const char* key, const char* json_key, std::int64_t fallback) {
    if (const Value* v = get({json_key})) {
      set(key, *v, v->origin);
    } else {
      Origin o = origin();
      o.file += fmt::format("#(default {} = {})", json_key, fallback);
      set(key, integer_value(fallback), o);
    }
  }
  // model.<key> fixed by the architecture.
  void fix(const char* key, const Value& v) {
    if (!m_out.count(std::string("model.") + key)) set(key, v, origin());
  }
  void set(const char* key, Value v, const Origin& at) {
    const KeySpec* spec = find_key("model", key);
    v.origin = at;
    if (auto s = to_setting(*spec, v, m_errors)) m_out[spec->full_name()] = *s;
  }
  bool flag(const char* key, bool fallback = false) {
    const Value* v = get({key});
    return v && v->type == Value::Type::boolean ? v->boolean : fallback;
  }
  std::int64_t number(const char* key, std::int64_t fallback) {
    const Value* v = get({key});
    return v && v->type == Value::Type::integer ? v->integer : fallback;
  }
  std::string text(const char* key) {
    const Value* v = get({key});
    return v && v->type == Value::Type::string ? v->string : "";
  }
  // A feature the planner does not model: an error naming the key.
  void refuse(const char* key, const std::string& why) {
    m_read.insert(key);
    const Value* v = field(m_doc, key);
    m_errors.push_back(Diagnostic{
        v ? v->origin : origin(),
        fmt::format("model_type \"{}\": {} = {}: {}", m_type, key, v ? v->to_text() : "?", why)});
  }
  // Errors for what is missing and for architecture keys nobody read.
  void finish() {
    if (!m_missing.empty())
      m_errors.push_back(Diagnostic{origin(), fmt::format("model_type \"{}\": missing {}", m_type,
                                                          fmt::join(m_missing, ", "))});
    for (const char* k : k_architecture_keys) {
      if (m_read.count(k)) continue;
      const Value* v = field(m_doc, k);
      if (v && matters(*v))
        m_errors.push_back(Diagnostic{
            v->origin,
            fmt::format("model_type \"{}\": {} = {} changes the architecture in a way the "
                        "planner does not read for this model type",
                        m_type, k, v->to_text())});
    }
  }

 private:
  const Value& m_doc;
  std::string m_path;
  std::string m_type;
  SettingMap& m_out;
  std::vector<Diagnostic>& m_errors;
  std::set<std::string> m_read;
  std::vector<std::string> m_missing;
};

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
  const Value* chunk = c.get({"attention_chunk_size"});
  if (!chunk || chunk->type != Value::Type::integer || chunk->integer <= 0) return;
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

// Sliding-window attention: the window (null or absent: none) and which layers are global.
void window(Cfg& c, std::int64_t global_every) {
  const Value* w = c.get({"sliding_window"});
  if (!w || w->type != Value::Type::integer || w->integer <= 0) return;
  c.set("sliding_window", *w, w->origin);
  if (global_every > 0) c.fix("global_every", integer_value(global_every));
}

void read_type(Cfg& c, std::vector<std::string>& warnings) {
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
  } else if (t == "olmo") {
    llama_like(c);
    c.set("norm", string_value("none"), c.origin());  // a LayerNorm without parameters
  } else if (t == "olmo2") {
    llama_like(c);
    c.fix("qk_norm", string_value("full"));
  } else if (t == "starcoder2") {
    shape_keys(c);
    c.opt("kv_heads", {"num_key_value_heads"});
    c.fix("tied_embeddings", boolean_value(c.flag("tie_word_embeddings", true)));
    c.fix("norm", string_value("layernorm"));
    c.fix("ffn_act", string_value("gelu"));
    c.fix("bias", string_value(c.flag("use_bias", true) ? "all" : "none"));
    window(c, 0);
  } else if (t == "phi") {
    // Phi-1/1.5/2: one LayerNorm before parallel attention and MLP; biases everywhere,
    // the LM head's too (modeling_phi.py).
    shape_keys(c);
    c.opt("kv_heads", {"num_key_value_heads"});
    c.fix("tied_embeddings", boolean_value(c.flag("tie_word_embeddings", false)));
    if (c.flag("qk_layernorm")) c.refuse("qk_layernorm", "Phi's q/k LayerNorms are not modelled");
    c.fix("norm", string_value("layernorm"));
    c.fix("norms_per_layer", integer_value(1));
    c.fix("ffn_act", string_value("gelu"));
    c.fix("bias", string_value("all"));
    c.fix("lm_head_bias", boolean_value(true));
  } else if (t == "gptj") {
    // GPT-J: one LayerNorm before parallel attention and MLP; no attention biases; the MLP and
    // the LM head have biases (modeling_gptj.py).
    c.need("layers", {"n_layer"});
    c.need("hidden", {"n_embd"});
    c.need("heads", {"n_head"});
    c.need("vocab", {"vocab_size"});
    c.opt("ffn", {"n_inner"});
    c.fix("tied_embeddings", boolean_value(c.flag("tie_word_embeddings", false)));
    c.fix("norm", string_value("layernorm"));
    c.fix("norms_per_layer", integer_value(1));
    c.fix("ffn_act", string_value("gelu"));
    c.fix("bias", string_value("mlp"));
    c.fix("lm_head_bias", boolean_value(true));
  } else if (t == "falcon") {
    // Falcon (modeling_falcon.py): parallel attention and MLP; multi-query (7B) or grouped
    // heads with two norms per layer (new_decoder_architecture: 40B, 180B); MLP 4h.
    c.need("layers", {"num_hidden_layers", "n_layer"});
    c.need("hidden", {"hidden_size"});
    c.need("heads", {"num_attention_heads", "n_head"});
    c.need("vocab", {"vocab_size"});
    c.opt("ffn", {"ffn_hidden_size"});
    const bool new_arch = c.flag("new_decoder_architecture");
    if (new_arch) {
      c.need("kv_heads", {"num_kv_heads", "n_head_kv"});
      c.fix("norms_per_layer", integer_value(c.number("num_ln_in_parallel_attn", 2)));
    } else {
      if (c.flag("multi_query", true))
        c.fix("kv_heads", integer_value(1));
      else
        c.get({"num_kv_heads", "n_head_kv"});
      if (!c.flag("parallel_attn", true))
        c.fix("norms_per_layer", integer_value(2));
      else
        c.fix("norms_per_layer", integer_value(1));
    }
    c.fix("tied_embeddings", boolean_value(c.flag("tie_word_embeddings", true)));
    c.fix("norm", string_value("layernorm"));
    c.fix("ffn_act", string_value("gelu"));
    if (c.flag("bias")) c.fix("bias", string_value("all"));
    if (c.flag("alibi")) c.get({"alibi"});
  } else if (t == "gpt2") {
    c.need("layers", {"n_layer"});
    c.need("hidden", {"n_embd"});
    c.need("heads", {"n_head"});
    c.need("vocab", {"vocab_size"});
    c.need("position_embeddings", {"n_positions"});
    c.opt("ffn", {"n_inner"});
    c.fix("norm", string_value("layernorm"));
    c.fix("ffn_act", string_value("gelu"));
    c.fix("bias", string_value("all"));
    c.fix("tied_embeddings", boolean_value(true));
  } else if (t == "gpt_neox") {
    shape_keys(c);
    c.opt("tied_embeddings", {"tie_word_embeddings"});
    c.fix("norm", string_value("layernorm"));
    c.fix("ffn_act", string_value("gelu"));
    c.fix("bias", string_value(c.flag("attention_bias", true) ? "all" : "mlp"));
  } else if (t == "bloom") {
    c.need("layers", {"n_layer", "num_hidden_layers"});
    c.need("hidden", {"hidden_size", "n_embed"});
    c.need("heads", {"n_head", "num_attention_heads"});
    c.need("vocab", {"vocab_size"});
    c.fix("norm", string_value("layernorm"));
    c.fix("ffn_act", string_value("gelu"));
    c.fix("bias", string_value("all"));
    c.fix("embedding_norm", boolean_value(true));
    c.fix("tied_embeddings", boolean_value(true));
  }
}

const std::vector<std::string>& supported() {
  static const std::vector<std::string> t = {
      "llama",      "mistral",   "mixtral",     "qwen2",       "qwen2_moe",
      "qwen3",      "qwen3_moe", "deepseek_v2", "deepseek_v3", "gemma",
      "gemma2",     "gemma3",    "gemma3_text", "phi",         "phi3",
      "starcoder2", "falcon",    "gptj",        "gpt_neox",    "olmo",
      "olmo2",      "bloom",     "gpt2",        "llama4",      "llama4_text"};
  return t;
}

}  // namespace

const std::vector<std::string>& hf_model_types() { return supported(); }

SettingMap read_hf_config(const std::string& path, const Origin& asked_at,
                          std::vector<Diagnostic>& errors, std::vector<std::string>& warnings,
                          std::vector<std::string>& guesses, const std::string& read_as) {
  SettingMap out;
  std::string why;
  const std::optional<std::string> text = read_regular_file(path, k_max_hf_config_bytes, why);
  if (!text) {
    errors.push_back(
        Diagnostic{asked_at, fmt::format("model.hf_config: cannot read \"{}\": {}", path, why)});
    return out;
  }
  Value doc;
  try {
    doc = parse_json(*text, path);
  } catch (const ConfigError& e) {
    for (const Diagnostic& d : e.diagnostics()) errors.push_back(d);
    return out;
  }
  const Origin file_origin{path, 0, 0, "hf_config"};
  const Value* type = field(doc, "model_type");
  std::string model_type = type && type->type == Value::Type::string ? type->string : "";
  // Multimodal wrappers (Gemma 3): the language model's config is nested in text_config.
  const Value* body = &doc;
  if (const Value* tc = field(doc, "text_config"); tc && tc->type == Value::Type::table) {
    const Value* inner = field(*tc, "model_type");
    if (model_type == "gemma3" || (inner && inner->type == Value::Type::string)) {
      body = tc;
      if (inner && inner->type == Value::Type::string) model_type = inner->string;
      if (model_type == "gemma3") model_type = "gemma3_text";
      if (model_type == "llama4") model_type = "llama4_text";
      warnings.push_back(fmt::format(
          "{}: the language model of text_config is planned; the vision tower is not counted",
          path));
    }
  }
  if (model_type == "gemma3" && body == &doc) model_type = "gemma3_text";
  if (model_type == "llama4" && body == &doc) model_type = "llama4_text";
  const auto& known = supported();
  const bool listed = std::find(known.begin(), known.end(), model_type) != known.end();
  std::vector<std::string> unused;
  std::string as = model_type;
  if (!listed) {
    if (read_as.empty()) {
      errors.push_back(Diagnostic{
          type ? type->origin : file_origin,
          fmt::format("model_type \"{}\" is not a supported architecture (supported: {}); if it "
                      "is a Llama-style decoder, say so with model.hf_arch = \"llama\"",
                      model_type.empty() ? "(missing)" : model_type, fmt::join(known, ", "))});
      return {};
    }
    as = read_as;
    warnings.push_back(fmt::format(
        "{}: model_type \"{}\" is not a known architecture; read as \"{}\" because model.hf_arch "
        "says so (the planner cannot check it)",
        path, model_type, read_as));
    guesses.push_back(warnings.back());
  } else if (!read_as.empty() && read_as != model_type) {
    errors.push_back(Diagnostic{
        asked_at, fmt::format("model.hf_arch = \"{}\" but the config.json's model_type is \"{}\", "
                              "which the planner reads itself: drop model.hf_arch",
                              read_as, model_type)});
    return {};
  }
  Cfg c(*body, path, as, out, errors);
  const std::size_t before = errors.size();
  read_type(c, warnings);
  c.finish();
  if (errors.size() > before) return {};
  // GPT-2 (n_inner null), GPT-J, Falcon and BLOOM use an MLP of 4h.
  if (!out.count("model.ffn") && out.count("model.hidden"))
    c.set("ffn", integer_value(4 * std::get<std::int64_t>(out.at("model.hidden").value)),
          file_origin);
  if (const Value* name = field(doc, "_name_or_path");
      name && name->type == Value::Type::string && !name->string.empty())
    c.set("name", *name, name->origin);
  return out;
}

}  // namespace trainledger::config
