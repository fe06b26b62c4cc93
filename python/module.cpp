// The Python module `trainledger` (docs/python.md). Each function fills the options of one of
// the program's commands and runs the function that command runs, in this process, with its
// JSON format: what it returns is that command's JSON document (docs/json-schema.md), parsed.
// Plans come as a path, TOML text or a dict of the plan file's sections; every error raises
// trainledger.Error with the program's located message.
#include <pybind11/pybind11.h>

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "trainledger/config.hpp"
#include "trainledger/report.hpp"
#include "trainledger/text.hpp"

namespace py = pybind11;
namespace cli = trainledger::cli;
namespace config = trainledger::config;
namespace text = trainledger::text;

namespace {

// trainledger.Error, created at import; never released (it lives as long as the interpreter).
PyObject* g_error = nullptr;

// A dict plan nested deeper than this is refused: a plan file has sections of tables of values.
constexpr int k_max_depth = 16;

// One error as check's JSON writes it: the file (or the option) with line and column, the
// message, the line as the program prints it, and the plan key it names.
struct Located {
  std::string file;
  std::string option;
  int line = 0;
  int column = 0;
  std::string message;
  std::string text;
  std::string key;
};

Located located(const config::Diagnostic& d) {
  Located l;
  const config::Origin& at = d.origin;
  const bool option = at.what == "option" || at.what == "--set";
  (option ? l.option : l.file) =
      text::printable(option && at.what == "--set" ? std::string("--set") : at.file);
  l.line = at.line;
  l.column = at.column;
  l.message = text::printable(d.message, 4096);
  l.text = text::printable(d.to_string(), 4096);
  l.key = config::key_in_message(d.message);
  return l;
}

py::object or_none(const std::string& s) { return s.empty() ? py::object(py::none()) : py::str(s); }
py::object or_none(int n) { return n > 0 ? py::object(py::int_(n)) : py::object(py::none()); }

// Raises trainledger.Error: its text is every error's line; its attributes are the first one's
// location and key, every error (`errors`) and the program's exit code for it.
[[noreturn]] void raise_error(const std::vector<Located>& errors, int exit_code) {
  std::string message;
  py::list all;
  for (const Located& e : errors) {
    message += (message.empty() ? "" : "\n") + e.text;
    py::dict d;
    d["file"] = or_none(e.file);
    d["option"] = or_none(e.option);
    d["line"] = or_none(e.line);
    d["column"] = or_none(e.column);
    d["key"] = or_none(e.key);
    d["message"] = e.message;
    d["text"] = e.text;
    all.append(d);
  }
  const Located& first = errors.front();
  py::object error = py::reinterpret_borrow<py::object>(g_error)(message);
  error.attr("file") = or_none(first.file);
  error.attr("option") = or_none(first.option);
  error.attr("line") = or_none(first.line);
  error.attr("column") = or_none(first.column);
  error.attr("key") = or_none(first.key);
  error.attr("errors") = all;
  error.attr("exit_code") = exit_code;
  PyErr_SetObject(g_error, error.ptr());
  throw py::error_already_set();
}

// An error in an argument of a function (not in a plan): named after the argument.
[[noreturn]] void argument_error(const std::string& argument, const std::string& message,
                                 const std::string& key = "") {
  Located l;
  l.option = argument;
  l.message = message;
  l.text = "trainledger: error: " + argument + ": " + message;
  l.key = key;
  raise_error({l}, cli::k_exit_invalid);
}

std::string type_name(const py::handle& v) {
  return py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>();
}

// ---- plans given as dicts: TOML text --------------------------------------------------------

// "model.heads: " before a message about that value of a dict plan.
std::string fmt_where(const std::string& where) {
  return where.empty() ? std::string() : text::printable(where) + ": ";
}

toml::table table_of(const py::dict& d, int depth, const std::string& where);

// Where a converted value goes: a table's key, or the end of an array.
struct Sink {
  toml::table* table = nullptr;
  std::string key;
  toml::array* array = nullptr;
  template <class X>
  void operator()(X&& x) const {
    if (table)
      table->insert_or_assign(key, std::forward<X>(x));
    else
      array->push_back(std::forward<X>(x));
  }
};

void convert(const py::handle& v, int depth, const std::string& where, const Sink& sink) {
  if (depth > k_max_depth)
    argument_error(
        "plan", fmt_where(where) + "nested deeper than " + std::to_string(k_max_depth) + " levels",
        where);
  if (py::isinstance<py::bool_>(v)) {
    sink(v.cast<bool>());
  } else if (py::isinstance<py::int_>(v)) {
    long long n = 0;
    try {
      n = v.cast<long long>();
    } catch (const py::cast_error&) {
      argument_error("plan", fmt_where(where) + "an integer outside the 64-bit range", where);
    }
    sink(static_cast<std::int64_t>(n));
  } else if (py::isinstance<py::float_>(v)) {
    sink(v.cast<double>());
  } else if (py::isinstance<py::str>(v)) {
    sink(v.cast<std::string>());
  } else if (py::isinstance<py::dict>(v)) {
    sink(table_of(v.cast<py::dict>(), depth + 1, where));
  } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    toml::array a;
    std::size_t i = 0;
    for (const py::handle item : v)
      convert(item, depth + 1, where + "[" + std::to_string(i++) + "]", Sink{nullptr, "", &a});
    sink(std::move(a));
  } else {
    argument_error("plan",
                   fmt_where(where) + "a " + text::printable(type_name(v)) +
                       " is not a plan value (give a number, a string, a bool, a list or a dict)",
                   where);
  }
}

toml::table table_of(const py::dict& d, int depth, const std::string& where) {
  toml::table t;
  for (const auto& [k, v] : d) {
    if (!py::isinstance<py::str>(k))
      argument_error(
          "plan",
          fmt_where(where) + "a key must be a string, not a " + text::printable(type_name(k)),
          where);
    const std::string key = k.cast<std::string>();
    convert(v, depth, where.empty() ? key : where + "." + key, Sink{&t, key, nullptr});
  }
  return t;
}

// The dict as a plan file's text.
std::string toml_of(const py::dict& d) {
  const toml::table t = table_of(d, 0, "");
  std::ostringstream out;
  out << toml::toml_formatter(t) << "\n";
  return out.str();
}

// ---- arguments ------------------------------------------------------------------------------

std::string path_text(const py::handle& v) {
  return py::str(py::module_::import("os").attr("fspath")(v)).cast<std::string>();
}

bool is_path(const py::handle& v) {
  return !py::isinstance<py::str>(v) && py::hasattr(v, "__fspath__");
}

// The folder a text or dict plan's relative paths resolve against: base_dir, else the current
// directory.
std::string base_of(const py::object& base_dir) {
  if (base_dir.is_none()) return std::filesystem::current_path().string();
  if (py::isinstance<py::str>(base_dir) || is_path(base_dir)) return path_text(base_dir);
  argument_error("base_dir", "a folder's path, not a " + text::printable(type_name(base_dir)));
}

// `plan`: None (the embedded default plan), "default" (the same, unless a file has that name),
// a path (str or os.PathLike), TOML text (a str holding a newline or an "=") or a dict.
void plan_into(const py::object& plan, const std::string& base, const char* argument,
               std::string& path, std::optional<cli::PlanText>& text_plan) {
  path.clear();
  text_plan.reset();
  if (plan.is_none()) return;
  if (py::isinstance<py::dict>(plan)) {
    text_plan = cli::PlanText{toml_of(plan.cast<py::dict>()), "(dict)", base};
    return;
  }
  if (is_path(plan)) {
    path = path_text(plan);
    return;
  }
  if (py::isinstance<py::str>(plan)) {
    const std::string s = plan.cast<std::string>();
    if (s.find('\n') != std::string::npos || s.find('=') != std::string::npos) {
      text_plan = cli::PlanText{s, "(string)", base};
    } else if (s != "default" || std::filesystem::exists(s)) {
      if (s.empty()) argument_error(argument, "an empty path (None is the default plan)");
      path = s;
    }
    return;
  }
  argument_error(argument,
                 "a plan file's path, TOML text, a dict of the plan's sections or None "
                 "(the default plan), not a " +
                     text::printable(type_name(plan)));
}

// A value as --set writes it.
std::string value_text(const py::handle& v, const std::string& key) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v))
    return py::repr(v).cast<std::string>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  argument_error("set",
                 key + ": a " + text::printable(type_name(v)) +
                     " is not a value (give a number, a string or a bool)",
                 key);
}

// `set`: None, {"training.micro_batch": 2, ...}, "KEY=VALUE" or a list of them.
std::vector<std::string> sets_of(const py::object& set) {
  std::vector<std::string> out;
  if (set.is_none()) return out;
  if (py::isinstance<py::dict>(set)) {
    for (const auto& [k, v] : set.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k))
        argument_error("set", "a key must be a string, not a " + text::printable(type_name(k)));
      const std::string key = k.cast<std::string>();
      out.push_back(key + "=" + value_text(v, key));
    }
    return out;
  }
  if (py::isinstance<py::str>(set)) return {set.cast<std::string>()};
  if (py::isinstance<py::list>(set) || py::isinstance<py::tuple>(set)) {
    for (const py::handle item : set) {
      if (!py::isinstance<py::str>(item))
        argument_error("set",
                       "each item is \"KEY=VALUE\", not a " + text::printable(type_name(item)));
      out.push_back(item.cast<std::string>());
    }
    return out;
  }
  argument_error("set", "a dict of keys and values, \"KEY=VALUE\" or a list of them, not a " +
                            text::printable(type_name(set)));
}

// A list of paths: None, one path, or a list of them.
std::vector<std::string> paths_of(const py::object& v, const char* argument) {
  std::vector<std::string> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::str>(v) || is_path(v)) return {path_text(v)};
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    for (const py::handle item : v) {
      if (!py::isinstance<py::str>(item) && !is_path(item))
        argument_error(argument, "each item is a path, not a " + text::printable(type_name(item)));
      out.push_back(path_text(item));
    }
    return out;
  }
  argument_error(argument, "a path or a list of paths, not a " + text::printable(type_name(v)));
}

// A list of strings: None, one string, or a list of them.
std::vector<std::string> strings_of(const py::object& v, const char* argument) {
  std::vector<std::string> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::str>(v)) return {v.cast<std::string>()};
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    for (const py::handle item : v) {
      if (!py::isinstance<py::str>(item))
        argument_error(argument,
                       "each item is a string, not a " + text::printable(type_name(item)));
      out.push_back(item.cast<std::string>());
    }
    return out;
  }
  argument_error(argument, "a string or a list of strings, not a " + text::printable(type_name(v)));
}

// A share or size given as text ("10%") or a number (0.1).
std::string share_text(const py::object& v, const char* argument) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if ((py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) &&
      !py::isinstance<py::bool_>(v))
    return py::repr(v).cast<std::string>();
  argument_error(argument,
                 "a share such as \"10%\" or 0.1, not a " + text::printable(type_name(v)));
}

// confidence: "90%", 0.9, or None / "off" (the estimate alone).
std::string confidence_text(const py::object& v) {
  if (v.is_none()) return "off";
  return share_text(v, "confidence");
}

void one_of(const char* argument, const std::string& value,
            std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (value == c) return;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  argument_error(argument, "\"" + text::printable(value) + "\" is not one of " + list);
}

// A str argument (None: not given, "").
std::string string_arg(const py::object& v, const char* argument) {
  if (v.is_none()) return {};
  if (!py::isinstance<py::str>(v))
    argument_error(argument, "a string, not a " + text::printable(type_name(v)));
  return v.cast<std::string>();
}

// An int argument within [low, high] (None: `fallback`).
int int_arg(const py::object& v, const char* argument, int low, int high, int fallback) {
  if (v.is_none()) return fallback;
  if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
    argument_error(argument, "an integer, not a " + text::printable(type_name(v)));
  long long n = 0;
  try {
    n = v.cast<long long>();
  } catch (const py::cast_error&) {
    n = high + 1LL;
  }
  if (n < low || n > high)
    argument_error(argument, py::repr(v).cast<std::string>() + " is outside " +
                                 std::to_string(low) + "-" + std::to_string(high));
  return static_cast<int>(n);
}

bool bool_arg(const py::object& v, const char* argument) {
  if (!py::isinstance<py::bool_>(v))
    argument_error(argument, "True or False, not a " + text::printable(type_name(v)));
  return v.cast<bool>();
}

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
  g_error = error.inc_ref().ptr();
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
  m.def("explain", &explain_fn, py::kw_only(), "item"_a, "plan"_a, "stage"_a, "phase"_a, "set"_a,
        "calibration"_a, "base_dir"_a);
}
