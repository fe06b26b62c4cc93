// torchtitan TOML (torchtitan/config/job_config.py).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "import_sink.hpp"

namespace trainledger::config::importing {

void import_torchtitan(const Value& doc, Sink& s) {
  s.put("training.framework", string_value("pytorch", doc.origin));
  for (const auto& [section, table] : doc.fields) {
    if (table.type != Value::Type::table) continue;
    for (std::size_t i = 0; i < table.fields.size(); ++i) {
      const std::string& k = table.fields[i].first;
      const Value& v = table.fields[i].second;
      const std::string name = section + "." + k;
      if (section == "parallelism") {
        if (k == "tensor_parallel_degree")
          s.put("parallel.tp", v);
        else if (k == "pipeline_parallel_degree")
          s.put("parallel.pp", v);
        else if (k == "context_parallel_degree")
          s.put("parallel.cp", v);
        else if (k == "expert_parallel_degree")
          s.put("parallel.ep", v);
        else if (k == "data_parallel_shard_degree") {
          // FSDP unless the shard group is one rank (-1: every remaining rank).
          if (v.type == Value::Type::integer && v.integer != 1)
            s.put("parallel.zero", integer_value(3, v.origin));
          if (v.type == Value::Type::integer && v.integer > 1) s.put("parallel.zero_shard_size", v);
        } else if (k == "data_parallel_replicate_degree") {
          if (v.type == Value::Type::integer && v.integer > 1)
            s.ignore(name, "HSDP replicas follow from the cluster size and the shard degree");
        } else if (k == "pipeline_parallel_schedule" && v.type == Value::Type::string) {
          const std::string& x = v.string;
          if (x == "1F1B")
            s.put("parallel.schedule", string_value("1f1b", v.origin));
          else if (x == "GPipe")
            s.put("parallel.schedule", string_value("gpipe", v.origin));
          else if (x == "Interleaved1F1B")
            s.put("parallel.schedule", string_value("interleaved", v.origin));
          else
            s.ignore(name + " = " + x, "not a modelled schedule");
        } else if (k == "enable_async_tensor_parallel") {
          s.put("parallel.overlap_tp", v);
        } else if (k == "fsdp_reshard_after_forward" && v.type == Value::Type::string) {
          if (v.string == "never")
            s.put("parallel.reshard_after_forward", boolean_value(false, v.origin));
          else if (v.string == "always")
            s.put("parallel.reshard_after_forward", boolean_value(true, v.origin));
        } else {
          s.ignore(name, "");
        }
      } else if (section == "training") {
        if (k == "local_batch_size" || k == "batch_size")
          s.put("training.micro_batch", v);
        else if (k == "global_batch_size") {
          if (v.type == Value::Type::integer && v.integer > 0) s.put("training.global_batch", v);
        } else if (k == "seq_len")
          s.put("training.seq_len", v);
        else if (k == "mixed_precision_param" && v.type == Value::Type::string) {
          if (v.string == "bfloat16")
            s.put("training.precision", string_value("bf16", v.origin));
          else if (v.string == "float32")
            s.put("training.precision", string_value("fp32", v.origin));
        } else if (k == "compile")
          s.put("training.compile", v);
        else
          s.ignore(name, "does not change memory or time");
      } else if (section == "activation_checkpoint") {
        if (k == "mode" && v.type == Value::Type::string) {
          if (v.string == "full" || v.string == "none")
            s.put("training.recompute", string_value(v.string, v.origin));
          else if (v.string == "selective") {
            const Value* opt = field(table, "selective_ac_option");
            if (!opt || (opt->type == Value::Type::string && opt->string == "op")) {
              s.put("training.recompute", string_value("op", v.origin));
            } else if (opt->type == Value::Type::string) {
              // Every n-th layer recomputed in full.
              const long n = std::atol(opt->string.c_str());
              if (n > 0) {
                s.put("training.recompute", string_value("full", opt->origin));
                s.put("training.recompute_layers", number_value(1.0 / n, opt->origin));
              } else {
                s.error(opt->origin, "selective_ac_option: expected \"op\" or a positive integer");
              }
            }
          }
        } else if (k != "selective_ac_option") {
          s.ignore(name, "");
        }
      } else if (section == "compile") {
        if (k == "enable") s.put("training.compile", v);
      } else if (section == "model") {
        if (k == "converters" && v.type == Value::Type::array) {
          for (const Value& c : v.items)
            if (c.type == Value::Type::string && c.string == "float8")
              s.put("training.precision", string_value("fp8", c.origin));
        } else if (k == "flavor" && v.type == Value::Type::string) {
          const Value* model = field(table, "name");
          const std::string family =
              model && model->type == Value::Type::string ? model->string : "";
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
        }
      } else if (section == "quantize.linear.float8" || section == "float8") {
        if (k == "enable_fsdp_float8_all_gather") s.put("parallel.fp8_all_gather", v);
      } else {
        // Nested tables ([quantize.linear.float8]) arrive as tables of tables.
        if (section == "quantize" && v.type == Value::Type::table) {
          for (const auto& [k2, lin] : v.fields)
            if (k2 == "float8" && lin.type == Value::Type::table)
              if (const Value* fp8 = field(lin, "enable_fsdp_float8_all_gather"))
                s.put("parallel.fp8_all_gather", *fp8);
          continue;
        }
        s.ignore(section, "does not change memory or time");
        break;
      }
    }
  }
}

}  // namespace trainledger::config::importing
