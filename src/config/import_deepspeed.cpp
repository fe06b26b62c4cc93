// DeepSpeed JSON → plan keys (deepspeed/runtime/config.py, zero/config.py).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "import_sink.hpp"

namespace trainledger::config::importing {

// ------------------------------------------------------------------------------------------
// DeepSpeed JSON (deepspeed/runtime/config.py, zero/config.py).

void import_deepspeed(const Value& doc, Sink& s) {
  s.put("training.framework", string_value("deepspeed", doc.origin));
  for (const auto& [key, v] : doc.fields) {
    const Origin& at = v.origin;
    if (auto_value(v)) {
      s.ignore(key, "\"auto\": the Hugging Face Trainer fills it in");
      continue;
    }
    if (key == "train_micro_batch_size_per_gpu") {
      s.put("training.micro_batch", v);
    } else if (key == "train_batch_size") {
      s.put("training.global_batch", v);
    } else if (key == "gradient_accumulation_steps") {
      s.put("training.grad_accum", v);
    } else if (key == "bf16" || key == "fp16") {
      const Value* en = field(v, "enabled");
      if (en && en->type == Value::Type::boolean && en->boolean)
        s.put("training.precision", string_value(key, en->origin));
      for (const auto& [k, x] : v.fields)
        if (k != "enabled") s.ignore(key + "." + k, "loss scaling does not change memory or time");
    } else if (key == "zero_optimization") {
      for (const auto& [k, x] : v.fields) {
        const std::string name = "zero_optimization." + k;
        if (auto_value(x)) {
          s.ignore(name, "\"auto\": the Hugging Face Trainer fills it in");
        } else if (k == "stage") {
          s.put("parallel.zero", x);
        } else if (k == "overlap_comm") {
          s.put("parallel.overlap_dp", x);
        } else if (k == "reduce_bucket_size" || k == "allgather_bucket_size") {
          // Elements, not bytes: DeepSpeed's buckets hold 16-bit gradients (2 B each).
          if (const auto n = number_of(x); n && k == "reduce_bucket_size")
            s.put("parallel.bucket_size", string_value(fmt::format("{:.0f} B", *n * 2), x.origin));
          else if (k == "allgather_bucket_size")
            s.ignore(name, "the parameter all-gather bucket is not modelled");
        } else if (k == "offload_optimizer" || k == "offload_param") {
          const Value* dev = field(x, "device");
          if (dev && dev->type == Value::Type::string && dev->string != "none") {
            if (dev->string == "nvme") {
              s.error(dev->origin, fmt::format("{}.device = \"nvme\": offload to NVMe is not "
                                               "modelled (cpu is)",
                                               name));
              continue;
            }
            s.put(
                "parallel.offload",
                string_value(k == "offload_param" ? "optimizer+params" : "optimizer", dev->origin));
          }
        } else {
          s.ignore(name, "a tuning knob the planner does not model");
        }
      }
    } else if (key == "optimizer") {
      const Value* type = field(v, "type");
      if (type && type->type == Value::Type::string) {
        std::string t = type->string;
        for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (t == "adam" || t == "adamw" || t == "fusedadam" || t == "cpuadam")
          s.put("training.optimizer", string_value("adamw", type->origin));
        else if (t == "lion")
          s.put("training.optimizer", string_value("lion", type->origin));
        else if (t == "sgd")
          s.put("training.optimizer", string_value("sgd-momentum", type->origin));
        else
          s.ignore("optimizer.type " + type->string, "not a modelled optimizer: the plan's stays");
      }
    } else if (key == "activation_checkpointing") {
      s.ignore(key,
               "DeepSpeed's options only configure checkpointing the model code asks for: set "
               "training.recompute");
    } else {
      s.ignore(key, "does not change memory or time");
    }
    (void)at;
  }
}

}  // namespace trainledger::config::importing
