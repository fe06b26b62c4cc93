// torchtitan TOML (torchtitan/config/job_config.py).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <map>

#include "import_sink.hpp"

namespace trainledger::config::importing {

namespace {

// A string of `choices`, or a located error naming the key and what it takes.
const Value* choice(const Value& v, const std::string& name, const std::string& expected,
                    std::initializer_list<const char*> choices, Sink& s) {
  if (v.type == Value::Type::string)
    for (const char* c : choices)
      if (v.string == c) return &v;
  s.error(v.origin, fmt::format("{} = {}: expected {}", name, shown(v), expected));
  return nullptr;
}

// A degree of parallelism: an integer from 1 up (the plan key checks its maximum).
bool degree(const Value& v, const std::string& name, Sink& s) {
  if (v.type == Value::Type::integer && v.integer >= 1) return true;
  s.error(v.origin, fmt::format("{} = {}: expected a positive integer", name, shown(v)));
  return false;
}

void parallelism(const Value& table, Sink& s) {
  // The data-parallel degrees are read together once the table is read: FSDP shards over
  // dp_shard × cp, the plan's dp is dp_replicate × dp_shard (parallel_dims.py).
  const Value* shard = nullptr;
  const Value* replicate = nullptr;
  const Value* cp = nullptr;
  const Value* ep = nullptr;
  const Value* etp = nullptr;
  for (const auto& [k, v] : table.fields) {
    const std::string name = "parallelism." + k;
    if (k == "tensor_parallel_degree") {
      if (degree(v, name, s)) s.put("parallel.tp", v);
    } else if (k == "pipeline_parallel_degree") {
      if (degree(v, name, s)) s.put("parallel.pp", v);
    } else if (k == "context_parallel_degree") {
      if (degree(v, name, s)) {
        s.put("parallel.cp", v);
        cp = &v;
      }
    } else if (k == "expert_parallel_degree") {
      if (degree(v, name, s)) {
        s.put("parallel.ep", v);
        ep = &v;
      }
    } else if (k == "expert_tensor_parallel_degree") {
      if (degree(v, name, s)) etp = &v;
    } else if (k == "data_parallel_shard_degree") {
      // FSDP unless the shard group is one rank (-1: every remaining rank).
      if (v.type != Value::Type::integer || (v.integer < 1 && v.integer != -1)) {
        s.error(v.origin,
                fmt::format("{} = {}: expected -1 (every remaining rank) or a positive integer",
                            name, shown(v)));
      } else {
        shard = &v;
      }
    } else if (k == "data_parallel_replicate_degree") {
      if (degree(v, name, s)) replicate = &v;
    } else if (k == "pipeline_parallel_schedule") {
      if (v.type != Value::Type::string) {
        s.error(v.origin, fmt::format("{} = {}: expected a schedule name", name, shown(v)));
        continue;
      }
      // torch.distributed.pipelining's get_schedule_class reads the name in any case.
      std::string x = v.string;
      for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (x == "1f1b")
        s.put("parallel.schedule", string_value("1f1b", v.origin));
      else if (x == "gpipe")
        s.put("parallel.schedule", string_value("gpipe", v.origin));
      else if (x == "interleaved1f1b")
        s.put("parallel.schedule", string_value("interleaved", v.origin));
      else if (x == "dualpipev")
        s.put("parallel.schedule", string_value("dualpipev", v.origin));
      else if (x == "loopedbfs" || x == "interleavedzerobubble" || x == "zbvzerobubble" ||
               x == "pipelineschedulesingle" || x == "pipelineschedulemulti")
        s.ignore(name + " = " + v.string, "not a modelled schedule");
      else
        s.error(v.origin, fmt::format("{} = {}: not a schedule of torch.distributed.pipelining "
                                      "(1F1B, GPipe, Interleaved1F1B, LoopedBFS, "
                                      "InterleavedZeroBubble, ZBVZeroBubble, DualPipeV)",
                                      name, shown(v)));
    } else if (k == "enable_async_tensor_parallel") {
      s.put("parallel.overlap_tp", v);
    } else if (k == "fsdp_reshard_after_forward") {
      if (!choice(v, name, "\"default\", \"always\" or \"never\"", {"default", "always", "never"},
                  s))
        continue;
      if (v.string == "never")
        s.put("parallel.reshard_after_forward", boolean_value(false, v.origin));
      else if (v.string == "always")
        s.put("parallel.reshard_after_forward", boolean_value(true, v.origin));
      else
        s.ignore(name + " = \"default\"",
                 "torchtitan reshards unless pipeline parallel: set "
                 "parallel.reshard_after_forward");
    } else {
      s.ignore(name, "");
    }
  }
  // torchtitan's expert tensor-parallel degree: 1 unless given (config/job_config.py
  // Parallelism.expert_tensor_parallel_degree), and without effect when ep = 1 (the experts
  // then follow tp: the planner's etp 0).
  if (ep && ep->integer > 1)
    s.put("parallel.etp", etp ? *etp : integer_value(1, ep->origin));
  else if (etp)
    s.ignore("parallelism.expert_tensor_parallel_degree",
             "no effect with expert_parallel_degree 1");
  if (!shard && !replicate) return;
  const std::int64_t r = replicate ? replicate->integer : 1;
  const std::int64_t c = cp ? cp->integer : 1;
  // An absent shard degree is torchtitan's default, -1 (every remaining rank).
  const std::int64_t d = shard ? shard->integer : -1;
  const Origin& at = shard ? shard->origin : replicate->origin;
  if (d == 1) {
    s.put("parallel.dp", integer_value(r, at));  // replicas only: DDP
  } else if (d > 1) {
    s.put("parallel.zero", integer_value(3, at));
    s.put("parallel.dp", integer_value(r * d, at));
    // One shard group per replica: dp_shard × cp ranks, unless that is every rank.
    if (r > 1) s.put("parallel.zero_shard_size", integer_value(d * c, at));
  } else {
    s.put("parallel.zero", integer_value(3, at));
    if (r > 1)
      s.ignore("parallelism.data_parallel_replicate_degree with a shard degree of -1",
               "the shard group is every remaining rank of a replica: set parallel.dp and "
               "parallel.zero_shard_size");
  }
}

void training(const Value& table, Sink& s) {
  for (const auto& [k, v] : table.fields) {
    const std::string name = "training." + k;
    if (k == "local_batch_size" || k == "batch_size") {
      s.put("training.micro_batch", v);
    } else if (k == "global_batch_size") {
      // -1, torchtitan's default: local_batch_size × the data-parallel degree.
      if (v.type == Value::Type::integer && v.integer == -1)
        s.ignore(name + " = -1", "local_batch_size × data parallel, as the plan derives it");
      else
        s.put("training.global_batch", v);
    } else if (k == "seq_len") {
      s.put("training.seq_len", v);
    } else if (k == "mixed_precision_param") {
      // torchtitan's TORCH_DTYPE_MAP.
      if (!choice(v, name, "\"bfloat16\", \"float16\" or \"float32\"",
                  {"bfloat16", "float16", "float32"}, s))
        continue;
      s.put("training.precision", string_value(v.string == "bfloat16"  ? "bf16"
                                               : v.string == "float16" ? "fp16"
                                                                       : "fp32",
                                               v.origin));
    } else if (k == "compile") {
      s.put("training.compile", v);
    } else {
      s.ignore(name, "does not change memory or time");
    }
  }
}

void activation_checkpoint(const Value& table, Sink& s) {
  const Value* mode = field(table, "mode");
  const Value* opt = field(table, "selective_ac_option");
  for (const auto& [k, v] : table.fields)
    if (k != "mode" && k != "selective_ac_option") s.ignore("activation_checkpoint." + k, "");
  if (!mode) {
    if (opt) s.ignore("activation_checkpoint.selective_ac_option", "no mode beside it");
    return;
  }
  if (!choice(*mode, "activation_checkpoint.mode",
              "\"none\", \"full\", \"selective\" or \"memory_budget\"",
              {"none", "full", "selective", "memory_budget"}, s))
    return;
  if (mode->string != "selective" && opt)
    s.ignore("activation_checkpoint.selective_ac_option", "read with mode = \"selective\" only");
  if (mode->string == "full" || mode->string == "none") {
    s.put("training.recompute", string_value(mode->string, mode->origin));
  } else if (mode->string == "memory_budget") {
    s.ignore("activation_checkpoint.mode = \"memory_budget\"",
             "a compiler-chosen recompute is not modelled: set training.recompute");
  } else if (!opt) {
    // Selective without an option: read as the op-level save list.
    s.put("training.recompute", string_value("op", mode->origin));
  } else if (opt->type == Value::Type::string && opt->string == "op") {
    s.put("training.recompute", string_value("op", mode->origin));
  } else {
    // Every n-th layer recomputed in full.
    const auto n = opt->type == Value::Type::string ? parse_int(opt->string) : std::nullopt;
    if (n && *n > 0) {
      s.put("training.recompute", string_value("full", opt->origin));
      s.put("training.recompute_layers", number_value(1.0 / static_cast<double>(*n), opt->origin));
    } else {
      s.error(opt->origin,
              fmt::format("activation_checkpoint.selective_ac_option = {}: expected \"op\" or a "
                          "positive integer (as a string)",
                          shown(*opt)));
    }
  }
}

// The low-precision converters and the float8 recipe: a recipe applies only where a converter
// is listed (a [float8] table alone changes nothing in torchtitan).
struct Quantize {
  const Value* float8 = nullptr;  // the converter listed
  const Value* mx = nullptr;
  const Value* recipe = nullptr;  // float8 recipe_name
};

void model(const Value& table, Sink& s, Quantize& q) {
  const Value* flavor = field(table, "flavor");
  for (const auto& [k, v] : table.fields) {
    const std::string name = "model." + k;
    if (k == "converters") {
      if (v.type != Value::Type::array) {
        s.error(v.origin, fmt::format("{} = {}: expected a list of names", name, shown(v)));
        continue;
      }
      for (const Value& c : v.items) {
        if (c.type != Value::Type::string)
          s.error(c.origin, fmt::format("{}: expected names, got {}", name, shown(c)));
        else if (c.string == "float8" || c.string == "quantize.linear.float8" ||
                 c.string == "quantize.dense.float8")
          q.float8 = &c;
        else if (c.string == "mx" || c.string == "quantize.linear.mx" ||
                 c.string == "quantize.dense.mx")
          q.mx = &c;
        else
          s.ignore(name + " " + c.string, "not a modelled converter");
      }
    } else if (k == "flavor") {
      if (v.type != Value::Type::string) {
        s.error(v.origin, fmt::format("{} = {}: expected a string", name, shown(v)));
        continue;
      }
      const Value* m = field(table, "name");
      const std::string family = m && m->type == Value::Type::string ? m->string : "";
      static const std::map<std::string, std::string> presets = {
          {"llama3/8B", "llama-3.1-8b"},      {"llama3/70B", "llama-3.1-70b"},
          {"llama3/405B", "llama-3.1-405b"},  {"llama2/7B", "llama-2-7b"},
          {"llama2/13B", "llama-2-13b"},      {"llama2/70B", "llama-2-70b"},
          {"deepseek_v3/671B", "deepseek-v3"}};
      const auto p = presets.find(family + "/" + v.string);
      if (p != presets.end())
        s.put("model.preset", string_value(p->second, v.origin));
      else
        s.ignore(name + " = " + family + " " + v.string,
                 "no preset of that flavor: give model.preset or model.hf_config");
    } else if (k == "name") {
      if (v.type != Value::Type::string)
        s.error(v.origin, fmt::format("{} = {}: expected a string", name, shown(v)));
      else if (!flavor)
        s.ignore(name, "no flavor beside it: give model.preset or model.hf_config");
    } else {
      s.ignore(name, "does not change memory or time");
    }
  }
}

// [optimizer]: the implementation of torch.optim's step (components/optimizer.py passes
// fused=True or foreach=True/False); the name where the planner has the optimizer.
void optimizer(const Value& table, Sink& s) {
  for (const auto& [k, v] : table.fields) {
    const std::string name = "optimizer." + k;
    if (k == "implementation") {
      if (const Value* c = choice(v, name, "\"for-loop\", \"foreach\" or \"fused\"",
                                  {"for-loop", "foreach", "fused"}, s))
        s.put("training.optimizer_impl", *c);
    } else if (k == "name") {
      if (v.type != Value::Type::string)
        s.error(v.origin, fmt::format("{} = {}: expected a string", name, shown(v)));
      else if (v.string == "AdamW" || v.string == "Adam")
        s.put("training.optimizer", string_value("adamw", v.origin));
      else
        s.ignore(name + " = " + v.string, "not a modelled optimizer");
    } else {
      s.ignore(name, "does not change memory or time");
    }
  }
}

// [quantize.linear.float8] or the older [float8].
void float8(const Value& table, const std::string& section, Sink& s, Quantize& q) {
  for (const auto& [k, v] : table.fields) {
    if (k == "enable_fsdp_float8_all_gather")
      s.put("parallel.fp8_all_gather", v);
    else if (k == "recipe_name")
      q.recipe = &v;
    else
      s.ignore(section + "." + k, "");
  }
}

// torchtitan's float8 converter: tensorwise unless recipe_name says rowwise
// (components/quantization/float8.py; torchao Float8LinearConfig.from_recipe_name); the mx
// converter's MXFP8 (components/quantization/mx.py).
void put_quantize(const Quantize& q, Sink& s) {
  if (q.mx) {
    s.put("training.precision", string_value("fp8", q.mx->origin));
    s.put("training.recipe", string_value("mxfp8", q.mx->origin));
    return;
  }
  if (!q.float8) return;
  s.put("training.precision", string_value("fp8", q.float8->origin));
  if (!q.recipe) return;
  const Value& r = *q.recipe;
  if (r.type == Value::Type::string && (r.string == "tensorwise" || r.string == "rowwise")) {
    s.put("training.recipe", r);
  } else if (r.type == Value::Type::string && r.string == "rowwise_with_gw_hp") {
    s.put("training.recipe", string_value("rowwise", r.origin));
    s.ignore("float8.recipe_name = rowwise_with_gw_hp",
             "read as rowwise: its weight gradient in bf16 is not modelled");
  } else {
    s.error(r.origin, fmt::format("float8 recipe_name = {}: expected tensorwise, rowwise or "
                                  "rowwise_with_gw_hp",
                                  shown(r)));
  }
}

}  // namespace

void import_torchtitan(const Value& doc, Sink& s) {
  s.put("training.framework", string_value("pytorch", doc.origin));
  // torchtitan's launcher runs every job with PYTORCH_ALLOC_CONF="expandable_segments:True"
  // (run_train.sh; run_llama_train.sh since pytorch/torchtitan#643, October 2024).
  s.put("training.expandable_segments", boolean_value(true, doc.origin));
  // Its optimizer is torch.optim's fused kernel unless [optimizer] implementation says otherwise
  // (config/job_config.py, Optimizer.implementation = "fused").
  s.put("training.optimizer_impl", string_value("fused", doc.origin));
  Quantize quantize;
  for (const auto& [section, table] : doc.fields) {
    if (table.type != Value::Type::table) {
      s.ignore(section, "not a section");
      continue;
    }
    if (section == "parallelism") {
      parallelism(table, s);
    } else if (section == "training") {
      training(table, s);
    } else if (section == "activation_checkpoint") {
      activation_checkpoint(table, s);
    } else if (section == "compile") {
      for (const auto& [k, v] : table.fields) {
        if (k == "enable") {
          s.put("training.compile", v);
        } else if (k == "components") {
          // torchtitan compiles the loss only when "loss" is listed (components/loss.py,
          // BaseLoss._maybe_compile); the plan's default under compile is the compiled loss.
          if (v.type != Value::Type::array) {
            s.error(v.origin,
                    fmt::format("compile.components = {}: expected a list of names", shown(v)));
            continue;
          }
          bool loss = false;
          for (const Value& item : v.items)
            loss = loss || (item.type == Value::Type::string && item.string == "loss");
          if (!loss) s.put("training.loss", string_value("standard", v.origin));
        } else {
          s.ignore("compile." + k, "");
        }
      }
    } else if (section == "optimizer") {
      optimizer(table, s);
    } else if (section == "model") {
      model(table, s, quantize);
    } else if (section == "float8") {
      float8(table, section, s, quantize);
    } else if (section == "quantize") {
      // Nested tables ([quantize.linear.float8]) arrive as tables of tables.
      for (const auto& [k, v] : table.fields) {
        const Value* fp8 =
            k == "linear" && v.type == Value::Type::table ? field(v, "float8") : nullptr;
        if (fp8 && fp8->type == Value::Type::table) {
          float8(*fp8, "quantize.linear.float8", s, quantize);
          for (const auto& [k2, other] : v.fields)
            if (k2 != "float8") s.ignore("quantize.linear." + k2, "not modelled");
        } else {
          s.ignore("quantize." + k, "not modelled");
        }
      }
    } else {
      s.ignore(section, "does not change memory or time");
    }
  }
  put_quantize(quantize, s);
}

}  // namespace trainledger::config::importing
