"""What scripts/accuracy and scripts/bands share: a reference case's quantity from a plan report.

Mirrors tests/support/helpers.cpp (predicted_memory, unit_bytes), which the tests use.
"""

# Bytes per unit of a reference case's "unit".
UNITS = {"GiB": 2**30, "GB": 1e9, "MiB": 2**20, "MB": 1e6}


def memory_value(report, kind, stage):
    """The predicted quantity a case measured: "device" (nvidia-smi: the peak total),
    "reserved" (less the CUDA context and NCCL) or "allocated" (less the fragmentation reserve
    too), on the stage the case names ("first", "last", else the worst)."""
    stages = report["memory"]["stages"]
    worst = report["memory"]["worst_stage"]
    st = stages[0] if stage == "first" else stages[-1] if stage == "last" else stages[worst]
    v = st["peak_bytes"]
    item = {i["id"]: i["value"] for i in st["items"]}
    if kind == "device":
        return v
    v -= item.get("overhead.cuda_context", 0) + item.get("overhead.nccl", 0)
    if kind == "reserved":
        return v
    return v - item.get("overhead.fragmentation", 0)


def trainledger_binary(root, build=None):
    """The trainledger program to score: BUILD_DIR/trainledger when a folder is given, else the
    first of build/ci (the test command's), build/release (the run command's) and build/dev
    that holds one. Exits 2 with what to do when there is none."""
    import os
    import sys
    folders = [build] if build else [os.path.join(root, "build", b) for b in ("ci", "release", "dev")]
    for folder in folders:
        binary = os.path.join(folder, "trainledger")
        if os.path.isfile(binary) and os.access(binary, os.X_OK):
            return binary
    where = build if build else "build/ci, build/release or build/dev"
    sys.stderr.write(f"no trainledger program in {where}: build it first (scripts/dev run builds "
                     "build/release, scripts/dev test build/ci), or give its folder: "
                     f"{os.path.basename(sys.argv[0])} BUILD_DIR\n")
    sys.exit(2)
