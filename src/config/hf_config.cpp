// Hugging Face config.json → model settings. Key names per model_type follow the
// transformers configuration classes (LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config,
// Gemma2Config, GPT2Config, GPTNeoXConfig, BloomConfig); docs/config.md#hf_config.
#include <fmt/format.h>

#include "files.hpp"
#include "resolve.hpp"

namespace trainledger::config {

namespace {

struct Mapping {
  std::string key;                     // model.<key>
  std::vector<std::string> json_keys;  // first one present wins
};

struct Family {
  std::vector<std::string> types;  // model_type values
  std::vector<Mapping> required;
  std::vector<Mapping> optional;
  std::vector<std::pair<std::string, Value>> fixed;  // set by the architecture
};

Value str(const std::string& s) {
  Value v;
  v.type = Value::Type::string;
  v.string = s;
  return v;
}

Value integer(std::int64_t i) {
  Value v;
  v.type = Value::Type::integer;
  v.integer = i;
  return v;
}

Value boolean(bool b) {
  Value v;
  v.type = Value::Type::boolean;
  v.boolean = b;
  return v;
}

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {{"llama", "mistral", "qwen2", "mixtral"},
       {{"layers", {"num_hidden_layers"}},
        {"hidden", {"hidden_size"}},
        {"heads", {"num_attention_heads"}},
        {"ffn", {"intermediate_size"}},
        {"vocab", {"vocab_size"}}},
       {{"kv_heads", {"num_key_value_heads"}},
        {"head_dim", {"head_dim"}},
        {"tied_embeddings", {"tie_word_embeddings"}}},
       {{"norm", str("rmsnorm")}, {"ffn_act", str("swiglu")}}},
      {{"gemma2"},
       {{"layers", {"num_hidden_layers"}},
        {"hidden", {"hidden_size"}},
        {"heads", {"num_attention_heads"}},
        {"ffn", {"intermediate_size"}},
        {"vocab", {"vocab_size"}}},
       {{"kv_heads", {"num_key_value_heads"}}, {"head_dim", {"head_dim"}}},
       {{"norm", str("rmsnorm")},
        {"ffn_act", str("geglu")},
        {"tied_embeddings", boolean(true)},
        {"norms_per_layer", integer(4)}}},
      {{"gpt2"},
       {{"layers", {"n_layer"}},
        {"hidden", {"n_embd"}},
        {"heads", {"n_head"}},
        {"vocab", {"vocab_size"}},
        {"position_embeddings", {"n_positions"}}},
       {{"ffn", {"n_inner"}}},
       {{"norm", str("layernorm")},
        {"ffn_act", str("gelu")},
        {"bias", str("all")},
        {"tied_embeddings", boolean(true)}}},
      {{"gpt_neox"},
       {{"layers", {"num_hidden_layers"}},
        {"hidden", {"hidden_size"}},
        {"heads", {"num_attention_heads"}},
        {"ffn", {"intermediate_size"}},
        {"vocab", {"vocab_size"}}},
       {{"tied_embeddings", {"tie_word_embeddings"}}},
       {{"norm", str("layernorm")}, {"ffn_act", str("gelu")}, {"bias", str("all")}}},
      {{"bloom"},
       {{"layers", {"n_layer", "num_hidden_layers"}},
        {"hidden", {"hidden_size", "n_embed"}},
        {"heads", {"n_head", "num_attention_heads"}},
        {"vocab", {"vocab_size"}}},
       {},
       {{"norm", str("layernorm")},
        {"ffn_act", str("gelu")},
        {"bias", str("all")},
        {"embedding_norm", boolean(true)},
        {"tied_embeddings", boolean(true)}}},
  };
  return f;
}

const Value* field(const Value& doc, const std::string& key) {
  for (const auto& [k, v] : doc.fields)
    if (k == key && v.type != Value::Type::other) return &v;
  return nullptr;
}

std::string supported_types() {
  std::string s;
  for (const Family& f : families())
    for (const std::string& t : f.types) s += (s.empty() ? "" : ", ") + t;
  return s;
}

void set(SettingMap& out, const std::string& key, Value v, const Origin& origin,
         std::vector<Diagnostic>& errors) {
  const KeySpec* spec = find_key("model", key);
  v.origin = origin;
  if (auto s = to_setting(*spec, v, errors)) out[spec->full_name()] = *s;
}

}  // namespace

SettingMap read_hf_config(const std::string& path, const Origin& asked_at,
                          std::vector<Diagnostic>& errors, std::vector<std::string>& warnings,
                          std::vector<std::string>& guesses) {
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
  const std::string model_type = type && type->type == Value::Type::string ? type->string : "";
  const Family* family = nullptr;
  for (const Family& f : families())
    for (const std::string& t : f.types)
      if (t == model_type) family = &f;
  bool generic = false;
  if (!family) {
    // Unknown architecture: accept it only if the Llama-style fields are all there.
    family = &families().front();
    generic = true;
  }
  std::vector<std::string> missing;
  for (const Mapping& m : family->required) {
    const Value* v = nullptr;
    for (const std::string& k : m.json_keys)
      if (!v) v = field(doc, k);
    if (!v) {
      missing.push_back(m.json_keys.front());
      continue;
    }
    set(out, m.key, *v, v->origin, errors);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    const std::string what =
        generic ? fmt::format("unknown architecture (model_type \"{}\"; supported: {})",
                              model_type.empty() ? "missing" : model_type, supported_types())
                : fmt::format("model_type \"{}\"", model_type);
    errors.push_back(Diagnostic{file_origin, fmt::format("{}: missing {}", what, list)});
    return {};
  }
  if (generic) {
    warnings.push_back(fmt::format(
        "{}: model_type \"{}\" is not a known architecture; read as a Llama-style decoder "
        "(RMSNorm, SwiGLU, no biases)",
        path, model_type));
    guesses.push_back(warnings.back());
  }
  for (const Mapping& m : family->optional) {
    for (const std::string& k : m.json_keys) {
      if (const Value* v = field(doc, k)) {
        set(out, m.key, *v, v->origin, errors);
        break;
      }
    }
  }
  for (const auto& [key, value] : family->fixed) {
    if (!out.count("model." + key)) set(out, key, value, file_origin, errors);
  }
  // GPT-2 (n_inner null) and BLOOM use an MLP of 4h.
  if ((model_type == "gpt2" || model_type == "bloom") && !out.count("model.ffn") &&
      out.count("model.hidden")) {
    set(out, "ffn", integer(4 * std::get<std::int64_t>(out.at("model.hidden").value)), file_origin,
        errors);
  }
  if (model_type == "qwen2") set(out, "bias", str("qkv"), file_origin, errors);
  if (model_type == "mixtral") {
    const Value* e = field(doc, "num_local_experts");
    const Value* k = field(doc, "num_experts_per_tok");
    const Value* f = field(doc, "intermediate_size");
    if (e && k && f) {
      set(out, "experts", *e, e->origin, errors);
      set(out, "experts_per_token", *k, k->origin, errors);
      set(out, "expert_ffn", *f, f->origin, errors);
    } else {
      errors.push_back(Diagnostic{
          file_origin, "model_type \"mixtral\": missing num_local_experts or num_experts_per_tok"});
    }
  }
  if (const Value* bias = field(doc, "attention_bias");
      bias && bias->type == Value::Type::boolean && bias->boolean) {
    errors.push_back(Diagnostic{
        bias->origin, "attention_bias = true (biases on q, k, v and o) is not supported"});
  }
  if (const Value* name = field(doc, "_name_or_path");
      name && name->type == Value::Type::string && !name->string.empty())
    set(out, "name", *name, name->origin, errors);
  return out;
}

}  // namespace trainledger::config
