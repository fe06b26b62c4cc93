// A bounded shell-word expander for launch scripts (the Megatron-LM importer): variables,
// ${NAME:-default}, $((arithmetic)); conditionals are not evaluated. Plan folders come from
// untrusted pull requests, so every expansion is bounded: the nesting depth, each value, the
// words, and the work of the whole script (the bytes expansions produce and their count). The
// first bound crossed stops the reading with a located error; an import of any file under the
// 4 MiB cap stays well under a second.
#pragma once

#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace trainledger::config::importing {

// One expanded value of a launch script is a path, a number or a few dozen arguments in one
// string: 16 KiB is far beyond any, and stops a doubling A=$A$A chain after 14 lines.
inline constexpr std::size_t k_max_shell_value = 16 * 1024;
// All expansions of one script together: four times the 4 MiB file cap in bytes produced, and
// a million substitutions ($NAME, ${...}, $((...))).
inline constexpr std::size_t k_max_shell_output = std::size_t{16} << 20;
inline constexpr std::size_t k_max_shell_substitutions = 1000000;
inline constexpr std::size_t k_max_shell_words = 200000;
inline constexpr int k_max_shell_nesting = 8;  // ${A:-${B:-...}} and $((...)) within each other
inline constexpr int k_max_arith_depth = 64;   // parentheses and signs in one $((...))

struct Token {
  std::string text;
  int line = 0;
  // Why the word's value is not known (an undefined variable, a $((...)) that cannot be
  // evaluated); empty when it is.
  std::string problem;
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
    while (!failed() && std::getline(in, line)) {
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
    if (!failed() && !joined.empty()) logical(joined, start);
  }
  const std::vector<Token>& tokens() const { return m_tokens; }
  // A bound crossed: the line (of the logical line's start) and what went over it.
  bool failed() const { return m_failed_line > 0; }
  int failed_line() const { return m_failed_line; }
  const std::string& failure() const { return m_failure; }
  // A variable the script assigns (NAME=value, export NAME=value, or NAME=value before a
  // command): its expanded text and the line of its last assignment; nullptr when never set.
  const std::string* variable(const std::string& name, int* line = nullptr) const {
    const auto it = m_vars.find(name);
    if (it == m_vars.end()) return nullptr;
    if (line) *line = m_var_lines.at(name);
    return &it->second.text;
  }

 private:
  // The substituted text and why parts of it are not known. Each problem's marker is text
  // that stands in the value for what could not be substituted ("$TP", "$((A/0))").
  struct Problem {
    std::string marker, message;
  };
  struct Expanded {
    std::string text;
    std::vector<Problem> problems;
    bool more_problems = false;  // more than k_max_problems: any "$" in a part is suspect
  };
  static constexpr std::size_t k_max_problems = 8;

  static void add_problem(Expanded& e, const Problem& p) {
    for (const Problem& q : e.problems)
      if (q.marker == p.marker) return;
    if (e.problems.size() < k_max_problems)
      e.problems.push_back(p);
    else
      e.more_problems = true;
  }
  static void add_problems(Expanded& e, const Expanded& from) {
    for (const Problem& p : from.problems) add_problem(e, p);
    if (from.more_problems) e.more_problems = true;
  }

  void fail(int line, std::string message) {
    if (failed()) return;
    m_failed_line = line;
    m_failure = std::move(message);
  }

  void logical(const std::string& raw, int line) {
    const std::vector<std::string> words = split(raw);
    // Commands separated by ";" (split keeps an unquoted ";" as a word of its own).
    std::size_t begin = 0;
    for (std::size_t k = 0; k <= words.size() && !failed(); ++k) {
      if (k < words.size() && words[k] != ";") continue;
      command(words, begin, k, line);
      begin = k + 1;
    }
  }

  // Words [i, end) of one command: leading NAME=value assignments, then the arguments.
  void command(const std::vector<std::string>& words, std::size_t i, std::size_t end, int line) {
    if (i < end && (words[i] == "export" || words[i] == "local" || words[i] == "readonly" ||
                    words[i] == "declare"))
      ++i;
    for (; i < end && !failed(); ++i) {
      const std::string& w = words[i];
      const auto eq = w.find('=');
      if (eq == std::string::npos || eq == 0 || !identifier(w.substr(0, eq))) break;
      const std::string value = w.substr(eq + 1);
      if (!value.empty() && value[0] == '(') {
        // An array NAME=( ... ): its words are arguments.
        if (value.size() > 1) add(value.substr(1), line);
        for (std::size_t j = i + 1; j < end && !failed(); ++j) add(words[j], line);
        return;
      }
      Expanded x = expand(value, line, 0);
      if (failed()) return;
      m_var_lines[w.substr(0, eq)] = line;
      m_vars[w.substr(0, eq)] = std::move(x);
    }
    for (; i < end && !failed(); ++i) add(words[i], line);
  }

  void add(std::string w, int line) {
    if (w == ")" || w == "(") return;
    if (!w.empty() && w.back() == ')' && w.find('(') == std::string::npos) w.pop_back();
    if (w.empty()) return;
    if (w.find_first_of("$\"'#; \t\r\n\v\f") == std::string::npos) {
      // Nothing to substitute or split: the word as it is.
      if (m_tokens.size() >= k_max_shell_words) {
        fail(line,
             "the script has more than 200,000 words: not a launch script the importer "
             "reads");
        return;
      }
      m_tokens.push_back(Token{std::move(w), line, {}});
      return;
    }
    const Expanded x = expand(w, line, 0);
    if (failed()) return;
    // A quoted word may hold several arguments ("--fp8-format hybrid").
    for (std::string& part : split(x.text)) {
      if (m_tokens.size() >= k_max_shell_words) {
        fail(line,
             "the script has more than 200,000 words: not a launch script the importer "
             "reads");
        return;
      }
      Token t{std::move(part), line, {}};
      for (const Problem& p : x.problems)
        if (t.text.find(p.marker) != std::string::npos) {
          t.problem = p.message;
          break;
        }
      if (t.problem.empty() && x.more_problems && t.text.find('$') != std::string::npos)
        t.problem = "the script does not define the variables it names";
      m_tokens.push_back(std::move(t));
    }
  }

  static bool identifier(std::string_view s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
  }

  // Words, with quotes removed and comments dropped; an unquoted ";" is a word of its own.
  static std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    bool any = false, spans = true;
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
      if (spans && c == '$' && i + 1 < s.size() && (s[i + 1] == '(' || s[i + 1] == '{')) {
        // $((...)), $(...) and ${...} are one word, spaces inside them included. A span is
        // skipped once found, and the first one left open stops the search for the rest of
        // the line: each byte is scanned a bounded number of times.
        std::size_t end = std::string_view::npos;
        if (s[i + 1] == '{') {
          end = brace_end(s, i + 2);
        } else if (s.compare(i, 3, "$((") == 0) {
          end = arithmetic_end(s, i + 3);
          if (end != std::string_view::npos) ++end;
        } else {
          end = paren_end(s, i + 2);
        }
        if (end == std::string_view::npos) {
          spans = false;
        } else {
          cur.append(s, i, end + 1 - i);
          i = end;
          continue;
        }
      }
      if (std::isspace(static_cast<unsigned char>(c)) || c == ';') {
        if (!cur.empty() || any) out.push_back(cur);
        cur.clear();
        any = false;
        if (c == ';') out.emplace_back(";");
        continue;
      }
      cur += c;
    }
    if (!cur.empty() || any) out.push_back(cur);
    return out;
  }

  const Expanded* lookup(const std::string& name) const {
    const auto it = m_vars.find(name);
    return it == m_vars.end() ? nullptr : &it->second;
  }

  // Counts one substitution against the script's budget; false (and the reading stops) once
  // it is spent.
  bool spend(int line) {
    if (++m_substitutions > k_max_shell_substitutions) {
      fail(line,
           "the script's variables are substituted more than 1,000,000 times: not a "
           "launch script the importer reads");
      return false;
    }
    return true;
  }

  // $NAME, ${NAME}, ${NAME:-default}, $((arithmetic)), nested at most k_max_shell_nesting
  // deep; no value grows beyond k_max_shell_value, nor all of them together beyond
  // k_max_shell_output (no expansion bombs).
  Expanded expand(std::string_view w, int line, int depth) {
    Expanded out;
    if (depth > k_max_shell_nesting) {
      add_problem(out, Problem{std::string(w), "substitutions nested more than 8 deep"});
      out.text = std::string(w.substr(0, k_max_shell_value));
      return out;
    }
    for (std::size_t i = 0; i < w.size() && !failed(); ++i) {
      if (w[i] != '$' || i + 1 >= w.size()) {
        out.text += w[i];
      } else if (w.compare(i, 3, "$((") == 0) {
        if (!spend(line)) break;
        const std::size_t end = arithmetic_end(w, i + 3);
        if (end == std::string_view::npos) {
          const std::string rest(w.substr(i));
          add_problem(out, Problem{rest, "an unterminated $((...))"});
          out.text += rest;
          i = w.size();
        } else {
          const Expanded a = arithmetic(w.substr(i + 3, end - i - 3), line, depth);
          out.text += a.text;
          add_problems(out, a);
          i = end + 1;
        }
      } else if (w[i + 1] == '{') {
        if (!spend(line)) break;
        const std::size_t end = brace_end(w, i + 2);
        if (end == std::string_view::npos) {
          const std::string rest(w.substr(i));
          add_problem(out, Problem{rest, "an unterminated ${...}"});
          out.text += rest;
          i = w.size();
        } else {
          const std::string_view inner = w.substr(i + 2, end - i - 2);
          const auto dflt = inner.find(":-");
          const std::string name(inner.substr(0, dflt));
          const Expanded* v = lookup(name);
          if (v && !v->text.empty()) {
            out.text += v->text;
            add_problems(out, *v);
          } else if (dflt != std::string_view::npos) {
            const Expanded d = expand(inner.substr(dflt + 2), line, depth + 1);
            out.text += d.text;
            add_problems(out, d);
          } else if (v) {
            // Defined and empty.
          } else {
            undefined(out, name);
          }
          i = end;
        }
      } else if (std::isalpha(static_cast<unsigned char>(w[i + 1])) || w[i + 1] == '_') {
        if (!spend(line)) break;
        std::size_t j = i + 1;
        while (j < w.size() && (std::isalnum(static_cast<unsigned char>(w[j])) || w[j] == '_')) ++j;
        const std::string name(w.substr(i + 1, j - i - 1));
        if (const Expanded* v = lookup(name)) {
          out.text += v->text;
          add_problems(out, *v);
        } else {
          undefined(out, name);
        }
        i = j - 1;
      } else {
        out.text += w[i];
      }
      if (out.text.size() > k_max_shell_value) {
        fail(line,
             "a value of the script expands beyond 16 KiB: not a launch script the "
             "importer reads");
        break;
      }
    }
    m_output += out.text.size();
    if (m_output > k_max_shell_output)
      fail(line,
           "the script's variables expand to more than 16 MiB in all: not a launch "
           "script the importer reads");
    return out;
  }

  static void undefined(Expanded& out, const std::string& name) {
    const std::string marker = "$" + name;
    add_problem(out, Problem{marker, "the script does not define " + name +
                                         " (give the value, or import the argument list the "
                                         "job ran with)"});
    out.text += marker;
  }

  // The index of the "}" closing a ${ whose text starts at `from`, past the ${...} inside it.
  static std::size_t brace_end(std::string_view w, std::size_t from) {
    int open = 0;
    for (std::size_t i = from; i < w.size(); ++i) {
      if (w[i] == '$' && i + 1 < w.size() && w[i + 1] == '{') {
        ++open;
        ++i;
      } else if (w[i] == '}') {
        if (open == 0) return i;
        --open;
      }
    }
    return std::string_view::npos;
  }

  // The index of the ")" closing a $( whose text starts at `from`.
  static std::size_t paren_end(std::string_view w, std::size_t from) {
    int open = 0;
    for (std::size_t i = from; i < w.size(); ++i) {
      if (w[i] == '(') {
        ++open;
      } else if (w[i] == ')') {
        if (open == 0) return i;
        --open;
      }
    }
    return std::string_view::npos;
  }

  // The index of the "))" closing a $(( whose expression starts at `from`, with the
  // parentheses inside it balanced; npos when there is none.
  static std::size_t arithmetic_end(std::string_view w, std::size_t from) {
    int open = 0;
    for (std::size_t i = from; i < w.size(); ++i) {
      if (w[i] == '(') {
        ++open;
      } else if (w[i] == ')') {
        if (open == 0) return i + 1 < w.size() && w[i + 1] == ')' ? i : std::string_view::npos;
        --open;
      }
    }
    return std::string_view::npos;
  }

  // $((e)): integer + - * / % with parentheses and signs, over decimal numbers and variables
  // holding decimal integers, in 64 bits. An overflow, a division by zero or what the reader
  // does not evaluate leaves the text "$((e))" in the value with the reason.
  Expanded arithmetic(std::string_view e, int line, int depth) {
    const std::string original = "$((" + std::string(e) + "))";
    Expanded out;
    const Expanded inner = expand(e, line, depth + 1);  // $A and ${A:-4} first, as bash does
    if (failed()) return out;
    std::string why;
    if (!inner.problems.empty()) {
      why = inner.problems.front().message;
    } else {
      Arith a{inner.text, 0, *this, {}};
      std::int64_t x = 0;
      if (a.expr(x, 0) && (a.skip(), a.pos == a.s.size()))
        out.text = std::to_string(x);
      else
        why = a.error.empty() ? "the importer does not evaluate it" : a.error;
    }
    if (!why.empty()) {
      out.text = original;
      add_problem(out, Problem{original, shown_expr(original) + ": " + why});
    }
    return out;
  }

  static std::string shown_expr(const std::string& s) {
    return s.size() > 60 ? s.substr(0, 60) + "..." : s;
  }

  // The evaluator: recursive descent, each step checked (__builtin_*_overflow; INT64_MIN / -1
  // and % -1 overflow too).
  struct Arith {
    std::string_view s;
    std::size_t pos;
    const Shell& sh;
    std::string error;

    void skip() {
      while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
    }
    bool fail(std::string why) {
      if (error.empty()) error = std::move(why);
      return false;
    }
    bool expr(std::int64_t& out, int depth) {
      if (!term(out, depth)) return false;
      for (;;) {
        skip();
        if (pos >= s.size() || (s[pos] != '+' && s[pos] != '-')) return true;
        const char op = s[pos++];
        std::int64_t r = 0;
        if (!term(r, depth)) return false;
        if (op == '+' ? __builtin_add_overflow(out, r, &out) : __builtin_sub_overflow(out, r, &out))
          return fail("overflows a 64-bit integer");
      }
    }
    bool term(std::int64_t& out, int depth) {
      if (!unary(out, depth)) return false;
      for (;;) {
        skip();
        if (pos >= s.size() || (s[pos] != '*' && s[pos] != '/' && s[pos] != '%')) return true;
        const char op = s[pos++];
        if (op == '*' && pos < s.size() && s[pos] == '*') return fail("uses **, not evaluated");
        std::int64_t r = 0;
        if (!unary(r, depth)) return false;
        if (op == '*') {
          if (__builtin_mul_overflow(out, r, &out)) return fail("overflows a 64-bit integer");
        } else if (r == 0) {
          return fail(op == '/' ? "division by zero" : "modulo by zero");
        } else if (out == INT64_MIN && r == -1) {
          return fail("overflows a 64-bit integer");
        } else {
          out = op == '/' ? out / r : out % r;
        }
      }
    }
    bool unary(std::int64_t& out, int depth) {
      if (depth > k_max_arith_depth) return fail("nested more than 64 deep");
      skip();
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
        const char op = s[pos++];
        if (pos < s.size() && s[pos] == op) return fail("uses ++ or --, not evaluated");
        if (!unary(out, depth + 1)) return false;
        if (op == '-' && __builtin_sub_overflow(std::int64_t{0}, out, &out))
          return fail("overflows a 64-bit integer");
        return true;
      }
      return primary(out, depth);
    }
    bool primary(std::int64_t& out, int depth) {
      skip();
      if (pos >= s.size()) return fail("an operand is missing");
      if (s[pos] == '(') {
        ++pos;
        if (!expr(out, depth + 1)) return false;
        skip();
        if (pos >= s.size() || s[pos] != ')') return fail("a parenthesis is not closed");
        ++pos;
        return true;
      }
      std::size_t j = pos;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j == pos) return fail("uses an operator the importer does not evaluate");
      const std::string_view word = s.substr(pos, j - pos);
      pos = j;
      if (std::isdigit(static_cast<unsigned char>(word[0]))) {
        if (word.size() > 1 && word[0] == '0')
          return fail("a number with a leading 0 (octal or hexadecimal in the shell)");
        return number(word, out, word);
      }
      const Expanded* v = sh.lookup(std::string(word));
      if (!v) return fail("the script does not define " + std::string(word));
      if (!v->problems.empty()) return fail(v->problems.front().message);
      std::string_view text = v->text;
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
      return number(text, out, word);
    }
    bool number(std::string_view text, std::int64_t& out, std::string_view name) {
      const char* end = text.data() + text.size();
      const auto r = std::from_chars(text.data(), end, out);
      if (r.ec == std::errc::result_out_of_range) return fail("overflows a 64-bit integer");
      if (text.empty() || r.ec != std::errc() || r.ptr != end)
        return fail(std::string(name) + " is not a decimal integer");
      return true;
    }
  };

  std::map<std::string, Expanded> m_vars;
  std::map<std::string, int> m_var_lines;  // the line of each variable's last assignment
  std::vector<Token> m_tokens;
  std::size_t m_output = 0;         // bytes all expansions produced
  std::size_t m_substitutions = 0;  // $NAME, ${...}, $((...)) substituted
  int m_failed_line = 0;
  std::string m_failure;
};

}  // namespace trainledger::config::importing
