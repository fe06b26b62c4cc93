// config.json readers of the GPT lineage and other LayerNorm decoders (OlmoConfig,
// Olmo2Config, Starcoder2Config, PhiConfig, GPTJConfig, FalconConfig, GPT2Config,
// GPTNeoXConfig, BloomConfig): key names per the transformers configuration classes.
#include "hf_cfg.hpp"

namespace trainledger::config::hf {

bool read_gpt_family(Cfg& c) {
  const std::string& t = c.type();
  if (t == "olmo") {
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
      // FalconAttention: num_kv_heads = config.num_kv_heads if (new_decoder_architecture or
      // not multi_query) else 1: under multi_query the key is read by nobody.
      if (c.flag("multi_query", true)) {
        c.get({"num_kv_heads", "n_head_kv"});
        c.fix("kv_heads", integer_value(1));
      } else {
        // FalconConfig: num_kv_heads defaults to num_attention_heads.
        c.opt("kv_heads", {"num_kv_heads", "n_head_kv"});
      }
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
  } else {
    return false;
  }
  return true;
}

}  // namespace trainledger::config::hf
