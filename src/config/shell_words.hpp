// A bounded shell-word expander for launch scripts (the Megatron-LM importer): variables,
// ${NAME:-default}, $((arithmetic)); conditionals are not evaluated. Bounded in nesting depth,
// value length and word count, since plan folders come from untrusted pull requests.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace trainledger::config::importing {

struct Token {
  std::string text;
  int line = 0;
};

// A shell script's words after variable substitution. Assignments NAME=value (with
// ${NAME:-default} and $((a*b)) arithmetic of known values) are followed in order;
// conditionals are not evaluated (every argument the script names counts, the last wins).
class Shell {
 public:
  explicit Shell(const std::string& text) {
    std::istringstream in(text);
    std::string line, joined;
    int line_no = 0, start = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (joined.empty()) start = line_no;
      if (!line.empty() && line.back() == '\\') {
        joined += line.substr(0, line.size() - 1) + " ";
        continue;
      }
      joined += line;
      logical(joined, start);
      joined.clear();
    }
    if (!joined.empty()) logical(joined, start);
  }
  const std::vector<Token>& tokens() const { return m_tokens; }

 private:
  void logical(const std::string& raw, int line) {
    std::vector<std::string> words = split(raw);
    if (words.empty()) return;
    std::size_t i = 0;
    if (words[0] == "export" || words[0] == "local" || words[0] == "readonly") i = 1;
    // NAME=value or NAME=( ... )
    if (i < words.size()) {
      const std::string& w = words[i];
      const auto eq = w.find('=');
      if (eq != std::string::npos && eq > 0 && identifier(w.substr(0, eq))) {
        const std::string name = w.substr(0, eq);
        std::string value = w.substr(eq + 1);
        if (value == "(" || value.rfind("(", 0) == 0) {
          // An array: its words are arguments.
          if (value.size() > 1)
            words[i] = value.substr(1);
          else
            ++i;
          for (std::size_t j = i; j < words.size(); ++j) add(words[j], line);
          return;
        }
        m_vars[name] = expand(value, line);
        return;
      }
    }
    for (; i < words.size(); ++i) add(words[i], line);
  }

  void add(std::string w, int line) {
    if (w == ")" || w == "(") return;
    if (!w.empty() && w.back() == ')' && w.find('(') == std::string::npos) w.pop_back();
    if (w.empty()) return;
    const std::string x = expand(w, line);
    // A quoted word may hold several arguments ("--fp8-format hybrid").
    for (const std::string& part : split(x)) {
      if (m_tokens.size() >= 200000) {
        m_too_long = line;
        return;
      }
      m_tokens.push_back(Token{part, line});
    }
  }

  static bool identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
  }

  // Words, with quotes removed and comments dropped.
  static std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    bool any = false;
    char quote = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (quote) {
        if (c == quote)
          quote = 0;
        else
          cur += c;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
        any = true;
        continue;
      }
      if (c == '#' && cur.empty() && !any) break;
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!cur.empty() || any) out.push_back(cur);
        cur.clear();
        any = false;
        continue;
      }
      cur += c;
    }
    if (!cur.empty() || any) out.push_back(cur);
    return out;
  }

  std::string lookup(const std::string& name, int line, bool* known = nullptr) const {
    const auto it = m_vars.find(name);
    if (known) *known = it != m_vars.end();
    (void)line;
    return it == m_vars.end() ? "" : it->second;
  }

  // $NAME, ${NAME}, ${NAME:-default}, $((arithmetic)), nested at most 8 deep; a value may not
  // grow beyond 64 KiB (scripts come from pull requests: no expansion bombs).
  std::string expand(const std::string& w, int line, int depth = 0) {
    if (depth > 8) return undefined("(nested too deep)", line);
    std::string out;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] != '$' || i + 1 >= w.size()) {
        out += w[i];
        continue;
      }
      if (w.compare(i, 3, "$((") == 0) {
        const auto end = w.find("))", i + 3);
        if (end == std::string::npos) break;
        out += arithmetic(w.substr(i + 3, end - i - 3), line);
        i = end + 1;
      } else if (w[i + 1] == '{') {
        const auto end = w.find('}', i + 2);
        if (end == std::string::npos) break;
        const std::string inner = w.substr(i + 2, end - i - 2);
        const auto dflt = inner.find(":-");
        bool known = false;
        const std::string name = inner.substr(0, dflt);
        const std::string v = lookup(name, line, &known);
        out += known && !v.empty()         ? v
               : dflt != std::string::npos ? expand(inner.substr(dflt + 2), line, depth + 1)
                                           : undefined(name, line);
        i = end;
      } else if (std::isalpha(static_cast<unsigned char>(w[i + 1])) || w[i + 1] == '_') {
        std::size_t j = i + 1;
        while (j < w.size() && (std::isalnum(static_cast<unsigned char>(w[j])) || w[j] == '_')) ++j;
        bool known = false;
        const std::string name = w.substr(i + 1, j - i - 1);
        const std::string v = lookup(name, line, &known);
        out += known ? v : undefined(name, line);
        i = j - 1;
      } else {
        out += w[i];
      }
      if (out.size() > k_max_value) {
        m_too_long = line;
        return out.substr(0, k_max_value);
      }
    }
    return out;
  }

  static constexpr std::size_t k_max_value = 64 * 1024;

  std::string undefined(const std::string& name, int line) {
    m_unresolved[name] = line;
    return "$" + name;
  }

  // Integer + - * / over numbers and variables.
  std::string arithmetic(const std::string& e, int line) {
    std::int64_t acc = 0, term = 1;
    char add_op = '+', mul_op = '*';
    std::string cur;
    bool ok = true;
    auto value = [&](const std::string& t) -> std::int64_t {
      std::string v = t;
      if (!v.empty() && v[0] == '$') v = v.substr(1);
      if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0])))
        return std::atoll(v.c_str());
      bool known = false;
      const std::string x = lookup(v, line, &known);
      if (!known || x.empty() || !std::isdigit(static_cast<unsigned char>(x[0]))) ok = false;
      return std::atoll(x.c_str());
    };
    auto close_factor = [&] {
      const std::int64_t f = value(cur);
      cur.clear();
      if (mul_op == '*')
        term *= f;
      else if (f != 0)
        term /= f;
      else
        ok = false;
    };
    auto close_term = [&] {
      acc = add_op == '+' ? acc + term : acc - term;
      term = 1;
      mul_op = '*';
    };
    for (char c : e + "+") {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (c == '*' || c == '/') {
        close_factor();
        mul_op = c;
      } else if (c == '+' || c == '-') {
        close_factor();
        close_term();
        add_op = c;
      } else {
        cur += c;
      }
    }
    if (!ok) {
      m_unresolved["$((" + e + "))"] = line;
      return "$((" + e + "))";
    }
    return std::to_string(acc);
  }

  std::map<std::string, std::string> m_vars;
  std::vector<Token> m_tokens;

 public:
  std::map<std::string, int> m_unresolved;
  int m_too_long = 0;  // a line whose expansion went over the bound
};

}  // namespace trainledger::config::importing
