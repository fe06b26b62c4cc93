#include "validate.hpp"

#include "reader.hpp"
#include "trainledger/rules.hpp"

namespace trainledger::config {

void validate(const Resolution& r, const PlanInput& in, bool world_ok,
              std::vector<Diagnostic>& errors) {
  Reader reader(r, errors);
  for (const RuleViolation& v : check_rules(in, world_ok)) reader.error(v.key, v.message);
}

}  // namespace trainledger::config
