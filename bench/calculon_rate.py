#!/usr/bin/env python3
"""Calculon's layout search rate on this machine, for the side-by-side figure in docs/cli.md#search.

Runs Calculon's own search loop (calculon/llm/optimal_execution.py: the same tp, pp, interleaving,
recompute, optimizer-sharding and TP-communication loops, each calling OptimalExecution.search) in
one process until SECONDS have passed, and prints the executions it evaluated per second.

  python3 bench/calculon_rate.py CALCULON_CHECKOUT [SECONDS]

CALCULON_CHECKOUT is a clone of github.com/calculon-ai/calculon. The case is Calculon's GPT-3 175B
(models/gpt3-175B.json) on 4096 A100-80GB (systems/a100_80g.json), max batch 3072, float16;
trainledger's bench runs the same case (BM_search_gpt3_4096). Calculon's command line imports
psutil for a default only; a stand-in is put on the path when it is missing.
"""
import importlib.util
import itertools
import os
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
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
    count = good = 0
    for args in calls():
        r = OptimalExecution.search(*args)
        count += r[1]
        good += r[2]
        if time.time() - start > limit:
            break
    seconds = time.time() - start
    print(f"Calculon: {count} executions ({good} fit) in {seconds:.1f} s on one core: "
          f"{count / seconds:.1f} per second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
