#!/usr/bin/env python3
"""Calculon's layout search rate on this machine, for the side-by-side figure in docs/cli.md#search.

Runs Calculon's own search loop (calculon/llm/optimal_execution.py: the same tp, pp, interleaving,
recompute, optimizer-sharding and TP-communication loops, each calling OptimalExecution.search) in
one process until SECONDS have passed, and prints the executions it evaluated per second (its
process's CPU time; it runs on one thread).
With --trainledger BENCH (the trainledger_bench program of the bench preset) it then runs
BM_search_gpt3_4096 on one core in the same invocation, before and after Calculon's loop, and
prints both rates per second of one core and their ratio (the figure in docs/cli.md#search).

  python3 bench/calculon_rate.py CALCULON_CHECKOUT [SECONDS] [--trainledger BENCH]

CALCULON_CHECKOUT is a clone of github.com/calculon-ai/calculon. The case is Calculon's GPT-3 175B
(models/gpt3-175B.json) on 4096 A100-80GB (systems/a100_80g.json), max batch 3072, float16;
trainledger's bench runs the same case (BM_search_gpt3_4096). Calculon's command line imports
psutil for a default only; a stand-in is put on the path when it is missing.
"""
import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time


def trainledger_rate(bench):
    """Layouts per second of BM_search_gpt3_4096 with one search thread (the search runs on a
    worker thread, so Google Benchmark's cpu_time, the main thread's, does not see it: the wall
    time of one search on one otherwise idle core is its time)."""
    out = subprocess.run([bench, "--benchmark_filter=BM_search_gpt3_4096/1/",
                          "--benchmark_repetitions=3", "--benchmark_format=json"],
                         capture_output=True, text=True, check=True)
    rates = []
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        rates.append(b["layouts"] / (b["real_time"] * scale))
    return rates


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    args = sys.argv[1:]
    bench = None
    if "--trainledger" in args:
        bench = args[args.index("--trainledger") + 1]
        del args[args.index("--trainledger"):args.index("--trainledger") + 2]
    root = args[0]
    limit = float(args[1]) if len(args) > 1 else 60.0
    before = trainledger_rate(bench) if bench else []
    shim = tempfile.mkdtemp()
    for name, text in (("psutil", "def cpu_count(logical=True):\n    return 1\n"),
                       ("numpy", ""), ("pandas", "")):
        if importlib.util.find_spec(name) is None:
            with open(os.path.join(shim, name + ".py"), "w") as f:
                f.write(text)
    sys.path[:0] = [shim, root]
    import calculon  # noqa: E402
    from calculon.llm import Llm, OptimalExecution  # noqa: E402

    app = Llm.Application(calculon.io.read_json_file(os.path.join(root, "models/gpt3-175B.json")))
    syst = calculon.System(calculon.io.read_json_file(os.path.join(root, "systems/a100_80g.json")))
    procs, max_batch = 4096, 3072

    def calls():
        for tp in Llm.get_all_tensor_parallelisms(procs, app.hidden, app.attn_heads):
            for pp in Llm.get_all_pipeline_parallelisms(procs, tp, app.num_blocks):
                dp = Llm.get_data_parallelism(procs, tp, pp)
                for ppint in Llm.get_valid_pipeline_interleavings(app.num_blocks, pp):
                    batch = OptimalExecution.get_batch_size(dp, max_batch)
                    if batch is None:
                        continue
                    for recompute, sharding, tp_comm in itertools.product(
                            ["full", "attn_only", "none"], [True, False] if dp > 1 else [False],
                            ["ar", "p2p_rs_ag", "rs_ag"]):
                        yield (False, 1, False, procs, max_batch, "float16", app, syst, tp, pp,
                               dp, ppint, batch, recompute, sharding, tp_comm, [True], False,
                               True, True)

    start = time.time()
    cpu = time.process_time()
    count = good = 0
    for call in calls():
        r = OptimalExecution.search(*call)
        count += r[1]
        good += r[2]
        if time.time() - start > limit:
            break
    seconds = time.time() - start
    cpu = time.process_time() - cpu
    rate = count / cpu
    print(f"Calculon: {count} executions ({good} fit) in {seconds:.1f} s, {cpu:.1f} s of CPU on "
          f"one core: {rate:.1f} per CPU second")
    if bench:
        rates = before + trainledger_rate(bench)
        print(f"trainledger: {min(rates):,.0f}-{max(rates):,.0f} layouts per second on one core "
              f"(BM_search_gpt3_4096/1, {len(rates)} runs before and after)")
        print(f"ratio per layout judged: {min(rates) / rate:,.0f}-{max(rates) / rate:,.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
