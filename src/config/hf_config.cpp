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
#include "hf_cfg.hpp"
#include "resolve.hpp"

namespace trainledger::config {

namespace {

using hf::Cfg;
using hf::field;

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
                          std::vector<std::string>& guesses, const std::string& read_as,
                          const std::string& root) {
  SettingMap out;
  std::string why;
  const std::optional<std::string> text = read_file_inside(path, root, k_max_hf_config_bytes, why);
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
  if (!hf::read_llama_family(c, warnings)) hf::read_gpt_family(c);
  c.finish();
  if (errors.size() > before) return {};
  // GPT-2 (n_inner null), GPT-J, Falcon and BLOOM use an MLP of 4h.
  if (!out.count("model.ffn") && out.count("model.hidden"))
    c.set("ffn", integer_value(4 * std::get<std::int64_t>(out.at("model.hidden").value)),
          file_origin);
  // The model's name: the hub id or folder it was saved from (_name_or_path: a local path
  // gives its last folder), else its class (architectures[0]), else its model_type.
  if (const Value* name = field(doc, "_name_or_path");
      name && name->type == Value::Type::string && !name->string.empty()) {
    Value shown = *name;
    std::string s = name->string;
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    if (!s.empty() && (s.front() == '/' || s.front() == '.' || s.front() == '~'))
      s = s.substr(s.find_last_of('/') + 1);
    if (!s.empty()) shown.string = s;
    c.set("name", shown, name->origin);
  } else if (const Value* arch = field(doc, "architectures");
             arch && arch->type == Value::Type::array && !arch->items.empty() &&
             arch->items.front().type == Value::Type::string &&
             !arch->items.front().string.empty()) {
    c.set("name", arch->items.front(), arch->origin);
  } else if (!model_type.empty() && type) {
    Value shown = *type;
    shown.string = model_type;
    c.set("name", shown, type->origin);
  }
  return out;
}

}  // namespace trainledger::config
