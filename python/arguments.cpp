// The Python functions' arguments as the program's options (docs/python.md).
#include "arguments.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <sstream>

#include "errors.hpp"
#include "trainledger/text.hpp"

namespace trainledger::python {

namespace {

// A dict plan nested deeper than this is refused: a plan file has sections of tables of values.
constexpr int k_max_depth = 16;

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

}  // namespace

std::string base_of(const py::object& base_dir) {
  if (base_dir.is_none()) return std::filesystem::current_path().string();
  if (py::isinstance<py::str>(base_dir) || is_path(base_dir)) return path_text(base_dir);
  argument_error("base_dir", "a folder's path, not a " + text::printable(type_name(base_dir)));
}

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

std::string share_text(const py::object& v, const char* argument) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if ((py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) &&
      !py::isinstance<py::bool_>(v))
    return py::repr(v).cast<std::string>();
  argument_error(argument,
                 "a share such as \"10%\" or 0.1, not a " + text::printable(type_name(v)));
}

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

std::string string_arg(const py::object& v, const char* argument) {
  if (v.is_none()) return {};
  if (!py::isinstance<py::str>(v))
    argument_error(argument, "a string, not a " + text::printable(type_name(v)));
  return v.cast<std::string>();
}

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

}  // namespace trainledger::python
