// The numbers-only evaluation allocates nothing in the memory ledger once its result's storage
// is warm (searches evaluate millions of candidates). Counts every operator new of the test
// binary; the count is read only around the evaluations below.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "helpers.hpp"
#include "trainledger/numbers.hpp"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// Every unaligned form of new and delete, so that each pair meets (malloc and free).
void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

using namespace trainledger;

TEST_CASE("the numbers-only memory ledger allocates nothing once warm", "[numbers]") {
  for (const char* plan : {"configs/plans/default.toml", "configs/plans/llama-2-7b-qlora.toml",
                           "configs/plans/llama-3.1-8b-fsdp.toml"}) {
    INFO(plan);
    const PlanInput input = config::load_plan_file(test::source_path(plan), {}).input;
    PlanNumbers n;
    evaluate(input, n, PlanScope{false, false});  // sizes the storage
    const long before = g_allocations.load();
    for (int i = 0; i < 10; ++i) evaluate(input, n, PlanScope{false, false});
    CHECK(g_allocations.load() - before == 0);
    // The time side keeps a small per-stage table.
    const long with_time = g_allocations.load();
    evaluate(input, n, PlanScope{true, false});
    CHECK(g_allocations.load() - with_time <= 2);
  }
}
