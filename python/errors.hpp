// trainledger.Error and the located errors it carries (the Python module, docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "trainledger/config.hpp"

namespace trainledger::python {

namespace py = pybind11;

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

// The exception type raise_error raises (trainledger.Error, made once at import).
void set_error_type(PyObject* type);

Located located(const config::Diagnostic& d);

// Raises trainledger.Error: its text is every error's line; its attributes are the first one's
// location and key, every error (`errors`) and the program's exit code for it.
[[noreturn]] void raise_error(const std::vector<Located>& errors, int exit_code);

// An error in an argument of a function (not in a plan): named after the argument.
[[noreturn]] void argument_error(const std::string& argument, const std::string& message,
                                 const std::string& key = "");

// The Python type's name of `v` ("dict", "NoneType").
std::string type_name(const py::handle& v);

}  // namespace trainledger::python
