// The Python module `trainledger` (docs/python.md). Each function fills the options of one of
// the program's commands and runs the function that command runs, in this process, with its
// JSON format: what it returns is that command's JSON document (docs/json-schema.md), parsed.
// Plans come as a path, TOML text or a dict of the plan file's sections; every error raises
// trainledger.Error with the program's located message.
#include <pybind11/pybind11.h>

#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "arguments.hpp"
#include "errors.hpp"
#include "trainledger/config.hpp"
#include "trainledger/model.hpp"
#include "trainledger/report.hpp"
#include "trainledger/text.hpp"

namespace py = pybind11;
namespace cli = trainledger::cli;
namespace config = trainledger::config;
namespace text = trainledger::text;
using namespace trainledger::python;

namespace {

// ---- running a command ----------------------------------------------------------------------

struct Outcome {
  int code = 0;
  std::string out;
  std::string err;
  std::vector<Located> errors;  // a ConfigError's
  std::string failure;          // any other exception's
};

// Runs `command(out, err)` without the GIL (a search runs on every core meanwhile; other Python
// threads go on), catching what the program catches.
template <class Command>
Outcome run_released(Command&& command) {
  Outcome r;
  std::ostringstream out, err;
  {
    py::gil_scoped_release release;
    try {
      r.code = command(out, err);
    } catch (const config::ConfigError& e) {
      r.code = cli::k_exit_invalid;
      for (const config::Diagnostic& d : e.diagnostics()) r.errors.push_back(located(d));
    } catch (const std::exception& e) {
      r.code = cli::k_exit_runtime;
      r.failure = e.what();
    }
  }
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The command's JSON document, or trainledger.Error with its messages.
py::object document(const Outcome& r) {
  if (!r.errors.empty()) raise_error(r.errors, r.code);
  if (r.code == cli::k_exit_runtime || (r.code == cli::k_exit_invalid && r.out.empty())) {
    // The messages the command wrote, one error each.
    std::vector<Located> errors;
    std::istringstream lines(r.failure.empty() ? r.err : "trainledger: error: " + r.failure);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      Located l;
      l.text = text::printable(line, 4096);
      const std::string prefix = "trainledger: error: ";
      l.message =
          text::printable(line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line, 4096);
      l.key = config::key_in_message(l.message);
      errors.push_back(l);
    }
    if (errors.empty())
      errors.push_back(Located{"", "", 0, 0, "failed", "trainledger: error: failed", ""});
    raise_error(errors, r.code);
  }
  return py::module_::import("json").attr("loads")(py::bytes(r.out));
}

struct Common {
  std::vector<std::string> sets;
  std::vector<std::string> calibration;
  std::string base;
};

Common common(const py::object& set, const py::object& calibration, const py::object& base_dir) {
  return {sets_of(set), paths_of(calibration, "calibration"), base_of(base_dir)};
}

cli::PlanOptions plan_options(const py::object& plan, const Common& c) {
  cli::PlanOptions o;
  plan_into(plan, c.base, "plan", o.plan, o.text);
  o.sets = c.sets;
  o.calibration = c.calibration;
  o.format = "json";
  return o;
}

// ---- the functions --------------------------------------------------------------------------

py::object plan_fn(const py::object& plan, const py::object& set, const py::object& calibration,
                   const py::object& headroom, const py::object& confidence,
                   const py::object& phase, const py::object& max, const py::object& keep_arg,
                   const py::object& units_arg, const py::object& base_dir) {
  const std::string keep = string_arg(keep_arg, "keep");
  const std::string units = string_arg(units_arg, "units");
  cli::PlanOptions o = plan_options(plan, common(set, calibration, base_dir));
  o.headroom = share_text(headroom, "headroom");
  o.confidence = confidence_text(confidence);
  if (!phase.is_none()) {
    o.phase = string_arg(phase, "phase");
    one_of("phase", o.phase, {"init", "forward", "backward", "optimizer", "checkpoint"});
  }
  if (!max.is_none()) {
    o.max = string_arg(max, "max");
    one_of("max", o.max, {"micro_batch", "seq_len"});
  }
  one_of("keep", keep, {"global_batch", "accum"});
  o.keep = keep;
  one_of("units", units, {"gib", "gb"});
  o.units = units;
  return document(run_released(
      [&](std::ostream& out, std::ostream& err) { return cli::run_plan(o, out, err); }));
}

py::object check_fn(const py::object& plan, const py::object& set, const py::object& calibration,
                    const py::object& capacity, const py::object& headroom,
                    const py::object& confidence, const py::object& strict,
                    const py::object& units_arg, const py::object& base_dir) {
  const std::string units = string_arg(units_arg, "units");
  const Common c = common(set, calibration, base_dir);
  cli::CheckOptions o;
  std::string path;
  plan_into(plan, c.base, "plan", path, o.text);
  if (!o.text) o.plans = {path.empty() ? std::string("default") : path};
  o.sets = c.sets;
  o.calibration = c.calibration;
  if (!capacity.is_none()) o.capacity = share_text(capacity, "capacity");
  o.headroom = share_text(headroom, "headroom");
  o.confidence = confidence_text(confidence);
  o.strict = bool_arg(strict, "strict");
  one_of("units", units, {"gib", "gb"});
  o.units = units;
  o.format = "json";
  const Outcome r = run_released(
      [&](std::ostream& out, std::ostream& err) { return cli::run_check(o, out, err); });
  py::object doc = document(r);
  // An invalid plan raises, as every other function's does (check's document lists its errors).
  for (const py::handle p : doc["plans"]) {
    if (p["status"].cast<std::string>() != "ERROR") continue;
    std::vector<Located> errors;
    for (const py::handle e : p["errors"]) {
      Located l;
      if (!e["file"].is_none()) l.file = e["file"].cast<std::string>();
      if (!e["option"].is_none()) l.option = e["option"].cast<std::string>();
      if (!e["line"].is_none()) l.line = e["line"].cast<int>();
      if (!e["column"].is_none()) l.column = e["column"].cast<int>();
      l.message = e["message"].cast<std::string>();
      l.text = e["text"].cast<std::string>();
      l.key = config::key_in_message(l.message);
      errors.push_back(l);
    }
    if (!errors.empty()) raise_error(errors, cli::k_exit_invalid);
  }
  return doc;
}

py::object search_fn(const py::object& plan, const py::object& gpus, const py::object& nodes,
                     const py::object& objective_arg, const py::object& top, const py::object& fix,
                     const py::object& allow, const py::object& jobs, const py::object& headroom,
                     const py::object& confidence, const py::object& fewest,
                     const py::object& target_step_time, const py::object& target_time_to_train,
                     const py::object& set, const py::object& calibration,
                     const py::object& base_dir) {
  cli::SearchCliOptions o;
  o.plan = plan_options(plan, common(set, calibration, base_dir));
  // 0: the plan's cluster (the program's limits: k_max_gpus, k_max_nodes in cmd_search.cpp).
  o.gpus = int_arg(gpus, "gpus", 0, 1 << 30, 0);
  o.nodes = int_arg(nodes, "nodes", 0, 1000000, 0);
  const std::string objective = string_arg(objective_arg, "objective");
  one_of("objective", objective, {"step-time", "tokens-per-s", "memory", "cost"});
  o.objective = objective;
  o.top = int_arg(top, "top", 1, 10000, 10);
  o.fix = strings_of(fix, "fix");
  o.allow = strings_of(allow, "allow");
  o.jobs = int_arg(jobs, "jobs", 0, 1024, 0);
  o.headroom = share_text(headroom, "headroom");
  o.confidence = confidence_text(confidence);
  o.fewest = bool_arg(fewest, "fewest");
  if (!target_step_time.is_none()) o.target = share_text(target_step_time, "target_step_time");
  if (!target_time_to_train.is_none())
    o.target_train = share_text(target_time_to_train, "target_time_to_train");
  o.format = "json";
  o.no_progress = true;
  return document(run_released(
      [&](std::ostream& out, std::ostream& err) { return cli::run_search(o, out, err); }));
}

py::object sweep_fn(const py::object& plan, const py::object& vary, const py::object& show,
                    const py::object& set, const py::object& calibration,
                    const py::object& base_dir) {
  cli::SweepOptions o;
  o.plan = plan_options(plan, common(set, calibration, base_dir));
  if (py::isinstance<py::dict>(vary)) {
    for (const auto& [k, values] : vary.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k))
        argument_error("vary", "a key must be a string, not a " + text::printable(type_name(k)));
      const std::string key = k.cast<std::string>();
      std::string list;
      const bool many = py::isinstance<py::list>(values) || py::isinstance<py::tuple>(values);
      if (many) {
        for (const py::handle v : values) list += (list.empty() ? "" : ",") + value_text(v, key);
      } else {
        list = value_text(values, key);
      }
      o.vary.push_back(key + "=" + list);
    }
  } else {
    o.vary = strings_of(vary, "vary");
  }
  if (o.vary.empty())
    argument_error("vary", "give a knob and its values: {\"training.seq_len\": [2048, 4096]}");
  if (!show.is_none()) {
    std::string list;
    for (const std::string& s : strings_of(show, "show")) list += (list.empty() ? "" : ",") + s;
    o.show = list;
  }
  o.format = "json";
  return document(run_released(
      [&](std::ostream& out, std::ostream& err) { return cli::run_sweep(o, out, err); }));
}

py::object diff_fn(const py::object& a, const py::object& b, const py::object& set,
                   const py::object& calibration, const py::object& base_dir) {
  const Common c = common(set, calibration, base_dir);
  cli::DiffOptions o;
  o.plan = plan_options(a, c);
  if (!b.is_none()) {
    plan_into(b, c.base, "b", o.other, o.other_text);
    if (o.other.empty() && !o.other_text)
      argument_error("b", "the default plan as B: give it as A, or B as a path, text or dict");
  }
  o.format = "json";
  return document(run_released(
      [&](std::ostream& out, std::ostream& err) { return cli::run_diff(o, out, err); }));
}

py::object explain_fn(const py::object& item, const py::object& plan, const py::object& stage,
                      const py::object& phase, const py::object& set, const py::object& calibration,
                      const py::object& base_dir) {
  cli::ExplainOptions o;
  o.plan = plan_options(plan, common(set, calibration, base_dir));
  o.item = string_arg(item, "item");
  o.stage = int_arg(stage, "stage", 0, 1 << 20, -1);
  if (!phase.is_none()) {
    o.phase = string_arg(phase, "phase");
    one_of("phase", o.phase, {"init", "forward", "backward", "optimizer", "checkpoint"});
  }
  o.format = "json";
  return document(run_released(
      [&](std::ostream& out, std::ostream& err) { return cli::run_explain(o, out, err); }));
}

// The presets `trainledger models` and `gpus` list, as dicts: their numbers in base units and
// the files' sources. `describe` turns one preset into its dict.
template <class Describe>
py::list presets(const std::vector<config::PresetInfo>& infos, Describe&& describe) {
  py::list out;
  try {
    for (const config::PresetInfo& p : infos) {
      py::dict d = describe(p);
      d["summary"] = p.summary;
      d["source"] = p.source;
      out.append(d);
    }
  } catch (const config::ConfigError& e) {
    std::vector<Located> errors;
    for (const config::Diagnostic& diag : e.diagnostics()) errors.push_back(located(diag));
    raise_error(errors, cli::k_exit_invalid);
  }
  return out;
}

py::list models_fn() {
  return presets(config::model_presets(), [](const config::PresetInfo& p) {
    const trainledger::ModelSpec m = config::load_model_preset(p.name);
    py::dict d;
    d["preset"] = p.name;
    d["name"] = m.name;
    d["params"] = trainledger::total_params(m);
    d["layers"] = m.layers;
    d["hidden"] = m.hidden;
    d["heads"] = m.heads;
    d["kv_heads"] = m.kv_heads;
    d["ffn"] = m.ffn;
    d["vocab"] = m.vocab;
    d["experts"] = m.experts;
    d["experts_per_token"] = m.experts_per_token;
    d["expert_ffn"] = m.expert_ffn;
    return d;
  });
}

py::list gpus_fn() {
  return presets(config::gpu_presets(), [](const config::PresetInfo& p) {
    const trainledger::GpuSpec g = config::load_gpu_preset(p.name);
    const trainledger::PeakFlops& f = g.peak_flops;
    py::dict peaks;
    for (const auto& [name, v] : f.entries())
      if (v > 0) peaks[name] = v;
    py::dict d;
    d["preset"] = p.name;
    d["name"] = g.name;
    d["memory_bytes"] = g.memory_bytes;
    d["memory_bandwidth"] = g.memory_bandwidth;
    d["peak_flops"] = peaks;
    return d;
  });
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "trainledger's core: the functions of the trainledger package (docs/python.md)";
  py::object error = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("trainledger.Error",
                                "An invalid plan or argument, or a failure: the program's "
                                "located message. Attributes: file, option, line, column, key "
                                "(the first error's), errors (every error as a dict) and "
                                "exit_code (the program's: 2 invalid input, 3 a failure).",
                                PyExc_ValueError, nullptr));
  set_error_type(error.inc_ref().ptr());
  m.attr("Error") = error;
  m.attr("__version__") = trainledger::report::version();
  m.attr("commit") = cli::build_commit();

  // Keyword arguments only, all given: the package's functions (trainledger/__init__.py) hold
  // the defaults and the documentation.
  using namespace py::literals;
  m.def("plan", &plan_fn, py::kw_only(), "plan"_a, "set"_a, "calibration"_a, "headroom"_a,
        "confidence"_a, "phase"_a, "max"_a, "keep"_a, "units"_a, "base_dir"_a);
  m.def("check", &check_fn, py::kw_only(), "plan"_a, "set"_a, "calibration"_a, "capacity"_a,
        "headroom"_a, "confidence"_a, "strict"_a, "units"_a, "base_dir"_a);
  m.def("search", &search_fn, py::kw_only(), "plan"_a, "gpus"_a, "nodes"_a, "objective"_a, "top"_a,
        "fix"_a, "allow"_a, "jobs"_a, "headroom"_a, "confidence"_a, "fewest"_a,
        "target_step_time"_a, "target_time_to_train"_a, "set"_a, "calibration"_a, "base_dir"_a);
  m.def("sweep", &sweep_fn, py::kw_only(), "plan"_a, "vary"_a, "show"_a, "set"_a, "calibration"_a,
        "base_dir"_a);
  m.def("diff", &diff_fn, py::kw_only(), "a"_a, "b"_a, "set"_a, "calibration"_a, "base_dir"_a);
  m.def("models", &models_fn);
  m.def("gpus", &gpus_fn);
  m.def("explain", &explain_fn, py::kw_only(), "item"_a, "plan"_a, "stage"_a, "phase"_a, "set"_a,
        "calibration"_a, "base_dir"_a);
}
