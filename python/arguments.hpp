// The Python functions' arguments as the program's options (the Python module,
// docs/python.md): plans given as paths, TOML text or dicts, --set values, shares, choices.
// Each refuses a wrong type or value with trainledger.Error naming the argument.
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "app.hpp"

namespace trainledger::python {

namespace py = pybind11;

// The folder a text or dict plan's relative paths resolve against: base_dir, else the current
// directory.
std::string base_of(const py::object& base_dir);

// `plan`: None (the embedded default plan), "default" (the same, unless a file has that name),
// a path (str or os.PathLike), TOML text (a str holding a newline or an "=") or a dict (written
// as TOML, named "(dict)").
void plan_into(const py::object& plan, const std::string& base, const char* argument,
               std::string& path, std::optional<cli::PlanText>& text_plan);

// A value as --set writes it (a number, a string or a bool).
std::string value_text(const py::handle& v, const std::string& key);
// `set`: None, {"training.micro_batch": 2, ...}, "KEY=VALUE" or a list of them.
std::vector<std::string> sets_of(const py::object& set);
// A list of paths: None, one path, or a list of them.
std::vector<std::string> paths_of(const py::object& v, const char* argument);
// A list of strings: None, one string, or a list of them.
std::vector<std::string> strings_of(const py::object& v, const char* argument);
// A share or size given as text ("10%") or a number (0.1).
std::string share_text(const py::object& v, const char* argument);
// confidence: "90%", 0.9, or None / "off" (the estimate alone).
std::string confidence_text(const py::object& v);
// `value` is one of `choices`, or trainledger.Error naming them.
void one_of(const char* argument, const std::string& value,
            std::initializer_list<const char*> choices);
// A str argument (None: not given, "").
std::string string_arg(const py::object& v, const char* argument);
// An int argument within [low, high] (None: `fallback`).
int int_arg(const py::object& v, const char* argument, int low, int high, int fallback);
bool bool_arg(const py::object& v, const char* argument);

}  // namespace trainledger::python
