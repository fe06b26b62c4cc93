// The numbers-only evaluation allocates nothing once its result's storage is warm (searches
// evaluate millions of candidates). Counts every operator new of the test binary; the count is read
// only around the evaluations below.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "helpers.hpp"
#include "trainledger/layout_search.hpp"
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

TEST_CASE("the numbers-only evaluation allocates nothing once warm", "[numbers]") {
  for (const char* plan : {"configs/plans/default.toml", "configs/plans/llama-2-7b-qlora.toml",
                           "configs/plans/llama-3.1-8b-fsdp.toml"}) {
    INFO(plan);
    const PlanInput input = config::load_plan_file(test::source_path(plan), {}).input;
    PlanNumbers n;
    evaluate(input, n, PlanScope{false, false});  // sizes the storage
    const long before = g_allocations.load();
    for (int i = 0; i < 10; ++i) evaluate(input, n, PlanScope{false, false});
    CHECK(g_allocations.load() - before == 0);
    // Nor does the time side.
    evaluate(input, n, PlanScope{true, false});
    const long with_time = g_allocations.load();
    evaluate(input, n, PlanScope{true, false});
    CHECK(g_allocations.load() - with_time == 0);
  }
}

TEST_CASE("the layout search allocates little per layout", "[search]") {
  config::LoadOptions o;
  PlanInput base = config::load_default_plan(o).input;
  base.cluster.nodes = 4;  // the search replaces the layout
  SearchOptions so;
  so.jobs = 1;
  const long start = g_allocations.load();
  const std::size_t listed = enumerate_layouts(base, so.space).size();
  const long enumeration = g_allocations.load() - start;
  INFO(listed << " layouts listed with " << enumeration << " allocations");
  // The list grows by doubling; a layout's own vector is empty for even stages.
  CHECK(enumeration * 20 < static_cast<long>(listed));
  // Judging: each thread's copy of the plan, the kept layouts' list, the rules' messages of
  // invalid layouts; nothing per layout in the memory or time evaluation.
  so.headroom = 0.9999;  // nothing fits: memory only
  long before = g_allocations.load();
  SearchResult r = search_layouts(base, so);
  const long memory_only = g_allocations.load() - before;
  INFO(r.enumerated << " judged for memory with " << memory_only << " allocations");
  CHECK(r.fitting == 0);
  CHECK(memory_only - enumeration < 100 + 8 * (r.enumerated - r.valid));
  so.headroom = 0.10;
  before = g_allocations.load();
  r = search_layouts(base, so);
  const long timed = g_allocations.load() - before;
  INFO(r.fitting << " of them timed with " << timed << " allocations");
  CHECK(r.fitting > 500);
  CHECK(timed - memory_only < r.fitting / 10 + 100);
}
