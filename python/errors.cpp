// trainledger.Error (docs/python.md): the program's located messages as one exception type.
#include "errors.hpp"

#include "app.hpp"
#include "trainledger/text.hpp"

namespace trainledger::python {

namespace {

// trainledger.Error, created at import; never released (it lives as long as the interpreter).
PyObject* g_error = nullptr;

py::object or_none(const std::string& s) { return s.empty() ? py::object(py::none()) : py::str(s); }
py::object or_none(int n) { return n > 0 ? py::object(py::int_(n)) : py::object(py::none()); }

}  // namespace

void set_error_type(PyObject* type) { g_error = type; }

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

[[noreturn]] void argument_error(const std::string& argument, const std::string& message,
                                 const std::string& key) {
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

}  // namespace trainledger::python
