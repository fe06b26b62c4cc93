// DeepSpeed JSON → plan keys (deepspeed/runtime/config.py, zero/config.py).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "import_sink.hpp"

namespace trainledger::config::importing {

// ------------------------------------------------------------------------------------------
// DeepSpeed JSON (deepspeed/runtime/config.py, zero/config.py).

namespace {

const char* const k_auto_why = "\"auto\": the Hugging Face Trainer fills it in";

// A value the reader needs to be a table ({...}); a located error otherwise.
bool is_table(const Value& v, const std::string& name, Sink& s) {
  if (v.type == Value::Type::table) return true;
  s.error(v.origin,
          fmt::format("{}: expected an object, got {} ({})", name, v.type_name(), shown(v)));
  return false;
}

// bf16 / fp16 "enabled": true or false; "auto" (the Hugging Face Trainer's) is listed as
// ignored; any other string or type is an error, never read as off.
std::optional<bool> enabled(const Value& v, const std::string& name, Sink& s) {
  const Value* en = field(v, "enabled");
  if (!en) return false;  // DeepSpeed's default
  if (en->type == Value::Type::boolean) return en->boolean;
  if (auto_value(*en)) {
    s.ignore(name + ".enabled", k_auto_why);
    return std::nullopt;
  }
  s.error(en->origin, fmt::format("{}.enabled: expected true or false, got {} ({})", name,
                                  en->type_name(), shown(*en)));
  return std::nullopt;
}

// zero_optimization.offload_optimizer / offload_param: whether to the CPU, with where it says so.
std::optional<Origin> offload_to_cpu(const Value& x, const std::string& name, Sink& s) {
  if (!is_table(x, name, s)) return std::nullopt;
  const Value* dev = field(x, "device");
  for (const auto& [k, y] : x.fields)
    if (k != "device") s.ignore(name + "." + k, "offload tuning the planner does not model");
  if (!dev) return std::nullopt;  // DeepSpeed's default: "none"
  if (dev->type != Value::Type::string) {
    s.error(dev->origin,
            fmt::format("{}.device: expected \"cpu\", \"nvme\" or \"none\", got {} ({})", name,
                        dev->type_name(), shown(*dev)));
    return std::nullopt;
  }
  if (dev->string == "none") return std::nullopt;
  if (dev->string == "cpu") return dev->origin;
  if (dev->string == "nvme")
    s.error(dev->origin,
            fmt::format("{}.device = \"nvme\": offload to NVMe is not modelled (cpu is)", name));
  else
    s.error(dev->origin, fmt::format("{}.device = {}: expected \"cpu\", \"nvme\" or \"none\"", name,
                                     shown(*dev)));
  return std::nullopt;
}

void zero_optimization(const Value& v, Sink& s) {
  if (!is_table(v, "zero_optimization", s)) return;
  std::optional<Origin> optimizer_cpu, param_cpu;
  for (const auto& [k, x] : v.fields) {
    const std::string name = "zero_optimization." + k;
    if (auto_value(x)) {
      s.ignore(name, k_auto_why);
    } else if (k == "stage") {
      if (x.type != Value::Type::integer)
        s.error(x.origin, fmt::format("{}: expected 0, 1, 2 or 3, got {} ({})", name, x.type_name(),
                                      shown(x)));
      else
        s.put("parallel.zero", x);
    } else if (k == "overlap_comm") {
      s.put("parallel.overlap_dp", x);
    } else if (k == "reduce_bucket_size") {
      // Elements, not bytes: DeepSpeed's buckets hold 16-bit gradients (2 B each).
      const auto n = number_of(x);
      if (!n || !(*n >= 1) || *n > 1e15 || *n != std::floor(*n))
        s.error(x.origin, fmt::format("{}: expected a positive whole number of elements, got {}",
                                      name, shown(x)));
      else
        s.put("parallel.bucket_size", string_value(fmt::format("{:.0f} B", *n * 2), x.origin));
    } else if (k == "allgather_bucket_size" || k == "stage3_max_live_parameters" ||
               k == "stage3_prefetch_bucket_size") {
      // Elements, as DeepSpeed counts them (runtime/zero/config.py).
      const auto n = number_of(x);
      const double least = k == "stage3_prefetch_bucket_size" ? 0 : 1;
      if (!n || !(*n >= least) || *n > 1e15 || *n != std::floor(*n))
        s.error(x.origin,
                fmt::format("{}: expected a whole number of elements, got {}", name, shown(x)));
      else
        s.put(k == "allgather_bucket_size"        ? "parallel.allgather_bucket_size"
              : k == "stage3_max_live_parameters" ? "parallel.zero3_max_live_parameters"
                                                  : "parallel.zero3_prefetch_bucket_size",
              number_value(*n, x.origin));
    } else if (k == "offload_optimizer") {
      optimizer_cpu = offload_to_cpu(x, name, s);
    } else if (k == "offload_param") {
      param_cpu = offload_to_cpu(x, name, s);
    } else {
      s.ignore(name, "a tuning knob the planner does not model");
    }
  }
  // Whatever order the file lists them in: parameters offloaded imply the optimizer's.
  if (param_cpu)
    s.put("parallel.offload", string_value("optimizer+params", *param_cpu));
  else if (optimizer_cpu)
    s.put("parallel.offload", string_value("optimizer", *optimizer_cpu));
}

void optimizer(const Value& v, Sink& s) {
  if (!is_table(v, "optimizer", s)) return;
  for (const auto& [k, x] : v.fields)
    if (k != "type") s.ignore("optimizer." + k, "does not change memory or time");
  const Value* type = field(v, "type");
  if (!type) return;
  if (type->type != Value::Type::string) {
    s.error(type->origin, fmt::format("optimizer.type: expected a string, got {} ({})",
                                      type->type_name(), shown(*type)));
    return;
  }
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

}  // namespace

void import_deepspeed(const Value& doc, Sink& s) {
  s.put("training.framework", string_value("deepspeed", doc.origin));
  std::optional<Origin> precision_at;  // where bf16 or fp16 is enabled
  std::string precision;
  for (const auto& [key, v] : doc.fields) {
    if (auto_value(v)) {
      s.ignore(key, k_auto_why);
      continue;
    }
    if (key == "train_micro_batch_size_per_gpu") {
      s.put("training.micro_batch", v);
    } else if (key == "train_batch_size") {
      s.put("training.global_batch", v);
    } else if (key == "gradient_accumulation_steps") {
      // At least 1 in DeepSpeed (the plan's 0 means "derive it", which the file cannot mean).
      if (v.type == Value::Type::integer && v.integer < 1)
        s.error(v.origin,
                fmt::format("gradient_accumulation_steps = {}: must be at least 1", v.integer));
      else
        s.put("training.grad_accum", v);
    } else if (key == "bf16" || key == "bfloat16" || key == "fp16") {
      // "bfloat16" is DeepSpeed's older name of the bf16 section.
      if (!is_table(v, key, s)) continue;
      const std::string dtype = key == "fp16" ? "fp16" : "bf16";
      const auto on = enabled(v, key, s);
      if (on && *on) {
        if (precision_at && precision != dtype) {
          s.error(field(v, "enabled")->origin,
                  "bf16 and fp16 are both enabled (DeepSpeed refuses the two together)");
          continue;
        }
        precision = dtype;
        precision_at = field(v, "enabled")->origin;
        s.put("training.precision", string_value(dtype, *precision_at));
      }
      for (const auto& [k, x] : v.fields)
        if (k != "enabled") s.ignore(key + "." + k, "loss scaling does not change memory or time");
    } else if (key == "zero_optimization") {
      zero_optimization(v, s);
    } else if (key == "optimizer") {
      optimizer(v, s);
    } else if (key == "communication_data_type") {
      // deepspeed/runtime/config.py get_communication_data_type: "fp32", "fp16" or "bf16" (a
      // ValueError otherwise); the dtype of the data-parallel gradient reduction.
      if (v.type != Value::Type::string ||
          (v.string != "fp32" && v.string != "fp16" && v.string != "bf16"))
        s.error(v.origin, fmt::format("communication_data_type: expected \"fp32\", \"fp16\" or "
                                      "\"bf16\", got {}",
                                      shown(v)));
      else
        s.put("training.reduce_dtype", v);
    } else if (key == "activation_checkpointing") {
      s.ignore(key,
               "DeepSpeed's options only configure checkpointing the model code asks for: set "
               "training.recompute");
    } else {
      s.ignore(key, "does not change memory or time");
    }
  }
}

}  // namespace trainledger::config::importing
