#include <catch2/catch.hpp>

#include "trainledger/expr.hpp"
#include "trainledger/ledger.hpp"

using trainledger::Expr;

TEST_CASE("format_number prints integers with separators and others compactly", "[expr]") {
  CHECK(trainledger::format_number(6738415616) == "6,738,415,616");
  CHECK(trainledger::format_number(4) == "4");
  CHECK(trainledger::format_number(0.0625) == "0.0625");
  CHECK(trainledger::format_number(-1200) == "-1,200");
  CHECK(trainledger::format_number(2.5e20) == "2.5e+20");
}

TEST_CASE("an expression's text is built from the same terms as its value", "[expr]") {
  const Expr e = Expr::term("bytes_per_param", 4, "B/param") * Expr::term("params", 7e9, "params") /
                 Expr::term("shard_ranks", 8, "shard ranks");
  CHECK(e.value() == 3.5e9);
  CHECK(e.text() == "4 B/param × 7,000,000,000 params / 8 shard ranks");
  REQUIRE(e.terms().size() == 3);
  CHECK(e.terms()[1].key == "params");
  CHECK(e.terms()[1].value == 7e9);
}

TEST_CASE("sums inside products get parentheses", "[expr]") {
  const Expr a = Expr::term("a", 1, "A");
  const Expr b = Expr::term("b", 2, "B");
  const Expr c = Expr::term("c", 3, "C");
  CHECK(((a + b) * c).text() == "(1 A + 2 B) × 3 C");
  CHECK(((a + b) * c).value() == 9);
  CHECK((a * b + c).text() == "1 A × 2 B + 3 C");
  CHECK((a / (b * c)).text() == "1 A / (2 B × 3 C)");
  CHECK((a - (b - c)).text() == "1 A - (2 B - 3 C)");
  CHECK((a - (b - c)).value() == 2);
}

TEST_CASE("terms with the same key and different values are kept apart", "[expr]") {
  const Expr e = Expr::term("params", 1, "p") + Expr::term("params", 2, "p");
  REQUIRE(e.terms().size() == 2);
  CHECK(e.terms()[1].key == "params_2");
  const Expr same = Expr::term("params", 1, "p") + Expr::term("params", 1, "p");
  CHECK(same.terms().size() == 1);
}

TEST_CASE("division by zero yields 0, not infinity", "[expr]") {
  const Expr e = Expr::term("a", 1, "") / Expr::term("b", 0, "");
  CHECK(e.value() == 0);
}

TEST_CASE("make_item rounds bytes and keeps the basis", "[ledger]") {
  const auto item = trainledger::make_item(
      trainledger::ItemId::params, "weights", trainledger::Unit::bytes,
      Expr::term("b", 2, "B/param") * Expr::term("n", 3.3, "params"), "test source");
  CHECK(item.value == 7);
  CHECK(item.formula == "2 B/param × 3.3 params");
  CHECK(item.source == "test source");
  CHECK(item.kind == trainledger::Kind::estimated);
}
