// YAML configs as flat maps (yaml_flat.hpp).
#include "yaml_flat.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace trainledger::config::importing {

namespace {

// Bounds on what a YAML file may make the importer do.
constexpr int k_max_depth = 64;                  // block and flow nesting together
constexpr std::size_t k_max_nodes = 200000;      // nodes visited while flattening (aliases too)
constexpr std::size_t k_max_bytes = 256u << 10;  // an RL recipe is 5-40 KiB
constexpr std::size_t k_max_items = 20000;       // lines and flow items yaml-cpp would build

// Refuses text nested deeper than k_max_depth (yaml-cpp's parser recurses per level: a
// "[[[[..." of a few MiB exhausts the stack) or with a NUL byte, before yaml-cpp sees it.
// Block nesting is the stack of indentations of the lines that open a level; flow nesting the
// brackets and braces outside quotes and comments.
// yaml-cpp's node tree costs a few hundred bytes per node and its parse time grows with them
// (4 MiB of one-character list items took 11-29 s and 1.9 GB): the items are counted here,
// every non-blank line and every flow item, before yaml-cpp builds any.
std::optional<std::string> structure_problem(const std::string& text, int& at_line) {
  if (text.size() > k_max_bytes) {
    at_line = 1;
    return fmt::format("larger than {} KiB (a training recipe is a few dozen)", k_max_bytes >> 10);
  }
  std::vector<std::size_t> indents;
  int flow = 0;
  int line = 1;
  std::size_t items = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t end = std::min(text.find('\n', i), text.size());
    std::size_t k = i;
    int dashes = 0;  // "- - - x" opens a sequence per dash on one line
    while (k < end && (text[k] == ' ' || text[k] == '-')) {
      if (text[k] == '-') ++dashes;
      ++k;
    }
    const bool blank = k >= end || text[k] == '#' || text[k] == '\r';
    if (!blank) ++items;
    if (!blank && flow == 0) {
      const std::size_t indent = k - i;
      while (!indents.empty() && indents.back() > indent) indents.pop_back();
      if (indents.empty() || indents.back() < indent) indents.push_back(indent);
    }
    char quote = 0;
    for (std::size_t c = i; c < end; ++c) {
      const char ch = text[c];
      if (ch == '\0') {
        at_line = line;
        return std::string("a NUL byte");
      }
      if (quote) {
        if (ch == quote) quote = 0;
        continue;
      }
      if (ch == '\'' || ch == '"')
        quote = ch;
      else if (ch == '#' && (c == i || text[c - 1] == ' ' || text[c - 1] == '\t'))
        break;
      else if (ch == '[' || ch == '{') {
        if (static_cast<int>(indents.size()) + ++flow > k_max_depth) {
          at_line = line;
          return fmt::format("nested deeper than {} levels", k_max_depth);
        }
      } else if ((ch == ']' || ch == '}') && flow > 0) {
        --flow;
      } else if (ch == ',' && flow > 0) {
        ++items;
      }
    }
    if (items > k_max_items) {
      at_line = line;
      return fmt::format("more than {} lines and list items (a training recipe has a few hundred)",
                         k_max_items);
    }
    if (static_cast<int>(indents.size()) + flow + dashes > k_max_depth) {
      at_line = line;
      return fmt::format("nested deeper than {} levels", k_max_depth);
    }
    ++line;
    i = end + 1;
  }
  return std::nullopt;
}

// Every scalar of `node` under its dotted path; lists are kept whole as their flow text
// (`[a, b]`) except the defaults list.
void flatten(const YAML::Node& node, const std::string& prefix, const std::string& file, Flat& out,
             std::size_t& visited, bool& too_big, int depth = 0) {
  if (too_big) return;
  // An alias can hold itself (`a: &a {b: *a}`): the walk is bounded in depth as the text is.
  if (++visited > k_max_nodes || depth > k_max_depth) {
    too_big = true;
    return;
  }
  const YAML::Mark m = node.Mark();
  Leaf leaf{"", file, m.line + 1, m.column + 1, false};
  switch (node.Type()) {
    case YAML::NodeType::Map:
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) continue;
        const std::string key = kv.first.Scalar();
        flatten(kv.second, prefix.empty() ? key : prefix + "." + key, file, out, visited, too_big,
                depth + 1);
        if (too_big) return;
      }
      if (node.size() == 0 && !prefix.empty()) out[prefix] = leaf;  // {}: an empty table
      return;
    case YAML::NodeType::Sequence: {
      std::string joined = "[";
      for (std::size_t k = 0; k < node.size(); ++k) {
        if (++visited > k_max_nodes) {
          too_big = true;
          return;
        }
        if (k > 0) joined += ", ";
        joined += node[k].IsScalar() ? node[k].Scalar() : "…";
        if (joined.size() > 4096) break;
      }
      leaf.value = joined + "]";
      out[prefix] = leaf;
      return;
    }
    case YAML::NodeType::Scalar:
      leaf.value = node.Scalar();
      out[prefix] = leaf;
      return;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      leaf.null = true;
      out[prefix] = leaf;
      return;
  }
}

}  // namespace

bool read_flat_yaml(const std::string& text, const std::string& path, Sink& s,
                    const std::string& expected, Flat& out) {
  int line = 0;
  if (const auto problem = structure_problem(text, line)) {
    s.error(Origin{path, line, 1, "import"}, "not read as YAML: " + *problem);
    return false;
  }
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // its message is yaml-cpp's "bad file"
    s.error(Origin{path, e.mark.line + 1, e.mark.column + 1, "import"},
            fmt::format("not read as YAML: nested deeper than yaml-cpp's limit of {} levels",
                        e.depth()));
    return false;
  } catch (const YAML::Exception& e) {
    s.error(Origin{path, e.mark.line + 1, e.mark.column + 1, "import"},
            "not valid YAML: " + shown(e.msg, 160));
    return false;
  }
  if (!doc.IsMap()) {
    s.error(Origin{path, 1, 1, "import"}, "expected a YAML mapping of " + expected);
    return false;
  }
  std::size_t visited = 0;
  bool too_big = false;
  flatten(doc, "", path, out, visited, too_big);
  if (too_big) {
    s.error(Origin{path, 1, 1, "import"},
            fmt::format("more than {} YAML nodes, or nested deeper than {} levels (aliases "
                        "counted each time they are used)",
                        k_max_nodes, k_max_depth));
    return false;
  }
  return true;
}

}  // namespace trainledger::config::importing
