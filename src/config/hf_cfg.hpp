// The config.json reader's shared parts: a Cfg turns one config.json (or its text_config) into
// model settings, remembering which keys each model_type's reader read, so that an
// architecture key nobody read is an error (docs/config.md#hf_config).
#pragma once

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "resolve.hpp"
#include "trainledger/text.hpp"

namespace trainledger::config::hf {

inline const Value* field(const Value& doc, const std::string& key) {
  for (const auto& [k, v] : doc.fields)
    if (k == key && v.type != Value::Type::other) return &v;
  return nullptr;
}

// Keys that change the architecture: present with a value that matters and not read by the
// model_type's reader, they are an error (never a silent dense Llama).
inline const char* const k_architecture_keys[] = {"num_experts",
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
inline bool matters(const Value& v) {
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
  // A flag, a count: absent or null is the fallback (transformers' default); a value of the
  // wrong type (a string "yes", a -7 count) is a located error, never the fallback.
  bool flag(const char* key, bool fallback = false) {
    const Value* v = get({key});
    if (!v || v->type == Value::Type::other) return fallback;
    if (v->type == Value::Type::boolean) return v->boolean;
    wrong(*v, key, "true or false");
    return fallback;
  }
  std::int64_t number(const char* key, std::int64_t fallback) {
    const Value* v = get({key});
    if (!v || v->type == Value::Type::other) return fallback;
    if (v->type == Value::Type::integer && v->integer >= 0) return v->integer;
    wrong(*v, key, "a whole number, 0 or more");
    return fallback;
  }
  // A window or chunk length: absent, null or 0 is none; else a positive integer (a string,
  // a negative or a boolean is a located error). The value, or nullptr for none.
  const Value* length(const char* key) {
    const Value* v = get({key});
    if (!v || v->type == Value::Type::other) return nullptr;
    if (v->type == Value::Type::integer && v->integer >= 0) return v->integer > 0 ? v : nullptr;
    wrong(*v, key, "a whole number of tokens, 0 or more (or null)");
    return nullptr;
  }
  void wrong(const Value& v, const char* key, const char* expected) {
    m_errors.push_back(
        Diagnostic{v.origin, fmt::format("model_type \"{}\": {}: expected {}, got {}", m_type, key,
                                         expected, text::printable(v.to_text(), 80))});
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

// Readers several model_types share (hf_llama.cpp): the MLP activation from hidden_act (gated
// for the Llama family), the five shape keys, the Llama-style decoder, a sliding window.
void gated_act(Cfg& c, const char* fallback);
void shape_keys(Cfg& c);
void llama_like(Cfg& c);
void window(Cfg& c, std::int64_t global_every);

// The per-model_type readers: false when the type is not theirs.
bool read_llama_family(Cfg& c, std::vector<std::string>& warnings);
bool read_gpt_family(Cfg& c);

}  // namespace trainledger::config::hf
