// The one translation unit that includes toml++: TOML text → Value with file:line:column.
#include <toml++/toml.h>

#include <algorithm>
#include <memory>

#include "value.hpp"

namespace trainledger::config {

namespace {

Origin origin_of(const toml::source_region& r, const std::string& path, const std::string& what) {
  Origin o;
  o.file = path;
  o.line = static_cast<int>(r.begin.line);
  o.column = static_cast<int>(r.begin.column);
  o.what = what;
  return o;
}

// toml++ keeps keys sorted; reports and "errors in file order" want the order as written.
void sort_by_position(Value& table) {
  std::vector<std::size_t> order(table.fields.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto before = [&](std::size_t a, std::size_t b) {
    const Origin& x = table.key_origins[a];
    const Origin& y = table.key_origins[b];
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  };
  std::stable_sort(order.begin(), order.end(), before);
  std::vector<Field> fields;
  std::vector<Origin> origins;
  for (std::size_t i : order) {
    fields.push_back(std::move(table.fields[i]));
    origins.push_back(std::move(table.key_origins[i]));
  }
  table.fields = std::move(fields);
  table.key_origins = std::move(origins);
}

Value convert(const toml::node& node, const std::string& path, const std::string& what) {
  Value v;
  v.origin = origin_of(node.source(), path, what);
  if (auto b = node.as_boolean()) {
    v.type = Value::Type::boolean;
    v.boolean = b->get();
  } else if (auto i = node.as_integer()) {
    v.type = Value::Type::integer;
    v.integer = i->get();
  } else if (auto f = node.as_floating_point()) {
    v.type = Value::Type::floating;
    v.floating = f->get();
  } else if (auto s = node.as_string()) {
    v.type = Value::Type::string;
    v.string = s->get();
  } else if (auto a = node.as_array()) {
    v.type = Value::Type::array;
    for (const toml::node& item : *a) v.items.push_back(convert(item, path, what));
  } else if (auto t = node.as_table()) {
    v.type = Value::Type::table;
    for (auto&& [key, child] : *t) {
      v.fields.push_back(Field{std::string(key.str()), convert(child, path, what)});
      v.key_origins.push_back(origin_of(key.source(), path, what));
    }
    sort_by_position(v);
  } else {
    v.type = Value::Type::other;  // dates and times: not used by any key
  }
  return v;
}

}  // namespace

Value parse_toml(const std::string& text, const std::string& path, const std::string& what) {
  try {
    toml::table table = toml::parse(text, path);
    Value v = convert(table, path, what);
    v.origin = Origin{path, 1, 1, what};
    return v;
  } catch (const toml::parse_error& e) {
    Origin o = origin_of(e.source(), path, what);
    throw ConfigError({Diagnostic{o, "invalid TOML: " + std::string(e.description())}});
  }
}

}  // namespace trainledger::config
