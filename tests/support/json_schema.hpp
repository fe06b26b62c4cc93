// A JSON Schema validator for the subset docs/schema/*.json use: type, enum, properties,
// required, additionalProperties, items, minimum, $ref into $defs.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace trainledger::test {

// Every violation of `schema` by `doc`, each as "JSON-pointer: what"; empty when it validates.
std::vector<std::string> schema_errors(const nlohmann::json& schema, const nlohmann::json& doc);

}  // namespace trainledger::test
