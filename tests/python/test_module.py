"""The Python module (docs/python.md), run by the README's test command against the module
installed from the Debian package (scripts/dev test) or any build (PYTHONPATH=build/release/python).

The program's own JSON (TRAINLEDGER_BIN, else `trainledger` on PATH, else build/release/) is the
reference: the module and the program are two doors to one core and must give the same numbers.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
import tomllib

import pytest

import trainledger

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "configs" / "plans" / "default.toml"
GRPO = ROOT / "configs" / "plans" / "grpo-llama-3.1-8b.toml"


def program():
    for candidate in (os.environ.get("TRAINLEDGER_BIN"), shutil.which("trainledger"),
                      str(ROOT / "build" / "release" / "trainledger")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no trainledger program to compare with (set TRAINLEDGER_BIN)")


def program_json(*args):
    out = subprocess.run([program(), *args, "--format", "json"], cwd=ROOT, check=False,
                         capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def without_source(doc):
    """The plan document less what names the plan's source (a path, "(dict)", "(string)")."""
    doc = dict(doc)
    for key in ("plan", "source", "inputs"):
        doc.pop(key, None)
    return doc


def test_plan_equals_the_program():
    doc = trainledger.plan(str(DEFAULT))
    ref = program_json("plan", str(DEFAULT))
    assert doc["schema"] == "trainledger.plan/2"
    assert doc["verdict"] == ref["verdict"]
    assert doc["time"] == ref["time"]
    assert doc["memory"] == ref["memory"]
    assert doc["verdict"]["peak_bytes"] > 30 * 2**30


def test_default_plan_when_none():
    assert trainledger.plan()["verdict"] == trainledger.plan(DEFAULT)["verdict"]
    assert trainledger.plan("default")["verdict"] == trainledger.plan(DEFAULT)["verdict"]


def test_dict_round_trip():
    """The plan file read into a dict (tomllib) plans to the same numbers as the file."""
    with open(DEFAULT, "rb") as f:
        as_dict = tomllib.load(f)
    by_file = trainledger.plan(DEFAULT)
    by_dict = trainledger.plan(as_dict)
    assert by_dict["verdict"] == by_file["verdict"]
    assert by_dict["time"] == by_file["time"]
    assert by_dict["memory"] == by_file["memory"]
    assert by_dict["plan"] == "(dict)"
    # And an RL plan, whose [rl] section holds nested values.
    with open(GRPO, "rb") as f:
        rl_dict = tomllib.load(f)
    assert trainledger.plan(rl_dict)["rl"] == trainledger.plan(GRPO)["rl"]


def test_toml_text():
    by_text = trainledger.plan(DEFAULT.read_text())
    assert by_text["verdict"] == trainledger.plan(DEFAULT)["verdict"]


def test_set_as_dict_equals_the_programs_set():
    doc = trainledger.plan(DEFAULT, set={"training.micro_batch": 2, "parallel.zero": 0,
                                         "parallel.sequence_parallel": False})
    ref = program_json("plan", str(DEFAULT), "--set", "training.micro_batch=2",
                       "--set", "parallel.zero=0", "--set", "parallel.sequence_parallel=false")
    assert doc["verdict"] == ref["verdict"]
    assert doc["verdict"]["peak_bytes"] != trainledger.plan(DEFAULT)["verdict"]["peak_bytes"]
    assert trainledger.plan(DEFAULT, set=["training.micro_batch=2", "parallel.zero=0",
                                          "parallel.sequence_parallel=false"])["verdict"] == \
        doc["verdict"]


def test_typo_raises_with_file_line_and_key(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(DEFAULT.read_text().replace("micro_batch = 1", "micro_bach = 1"))
    with pytest.raises(trainledger.Error) as caught:
        trainledger.plan(plan)
    e = caught.value
    line = next(i for i, text in enumerate(plan.read_text().splitlines(), 1)
                if text.startswith("micro_bach"))
    assert e.file == str(plan)
    assert e.line == line
    assert e.column == 1
    assert e.key == "training.micro_bach"
    assert e.exit_code == 2
    assert 'did you mean "micro_batch"' in str(e)
    assert f"{plan}:{line}:1" in str(e)
    assert isinstance(e, ValueError)
    assert e.errors[0]["key"] == "training.micro_bach"


def test_dict_errors_name_the_key():
    with pytest.raises(trainledger.Error) as caught:
        trainledger.plan({"model": {"preset": "llama-3.1-8b", "layers": None}})
    assert caught.value.key == "model.layers"
    with pytest.raises(trainledger.Error) as caught:
        trainledger.plan({"model": {"preset": "llama-3.1-8b"}, "parallel": {"tp": 3},
                          "cluster": {"gpu": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8}})
    assert caught.value.key.startswith("parallel")
    assert caught.value.file == "(dict)"


def test_bad_arguments_raise():
    with pytest.raises(trainledger.Error) as caught:
        trainledger.plan(phase="lunch")
    assert caught.value.option == "phase"
    with pytest.raises(trainledger.Error) as caught:
        trainledger.plan(set={"training.micro_batch": [1, 2]})
    assert caught.value.key == "training.micro_batch"
    with pytest.raises(trainledger.Error):
        trainledger.plan(DEFAULT, set={"training.micro_batch": "two"})
    with pytest.raises(trainledger.Error):
        trainledger.plan(42)
    with pytest.raises(trainledger.Error) as caught:
        trainledger.plan(str(ROOT / "no-such-plan.toml"))
    assert "cannot read the plan file" in str(caught.value)


def test_paths_stay_inside_the_base_dir(tmp_path):
    (tmp_path / "inside").mkdir()
    (tmp_path / "config.json").write_text("{}")
    plan = {"model": {"hf_config": "../config.json"}}
    with pytest.raises(trainledger.Error):
        trainledger.plan(plan, base_dir=tmp_path / "inside")


def test_check():
    ok = trainledger.check(DEFAULT)
    ref = program_json("check", str(DEFAULT))
    assert ok["schema"] == "trainledger.check/2"
    assert ok["exit_code"] == ref["exit_code"] == 0
    assert ok["plans"][0]["peak_bytes"] == ref["plans"][0]["peak_bytes"]
    over = trainledger.check(DEFAULT, capacity="40 GiB")
    assert over["exit_code"] == 1
    assert over["plans"][0]["status"] == "OVER"
    text = DEFAULT.read_text().replace("micro_batch = 1", "micro_batch = -1")
    line = text.splitlines().index("micro_batch = -1") + 1
    with pytest.raises(trainledger.Error) as caught:
        trainledger.check(text)
    assert (caught.value.file, caught.value.line) == ("(string)", line)
    assert caught.value.key == "training.micro_batch"
    assert caught.value.exit_code == 2


def test_search_ranks_layouts_and_releases_the_gil():
    # The default plan's search on one thread: about half a second on a 2-core machine.
    state = {"in_call": False}

    def run():
        state["in_call"] = True
        t0 = time.perf_counter()
        state["doc"] = trainledger.search(top=3, jobs=1)
        state["seconds"] = time.perf_counter() - t0
        state["in_call"] = False

    worker = threading.Thread(target=run)
    worker.start()
    # This thread runs while the search runs in C++: it sees the call in progress over most of
    # its time. Holding the GIL would let it see at most one switch interval (5 ms) of it.
    first = last = None
    while worker.is_alive():
        if state["in_call"]:
            now = time.perf_counter()
            first = now if first is None else first
            last = now
    worker.join()
    result = state
    doc = result["doc"]
    assert doc["schema"] == "trainledger.search/1"
    assert doc["search"]["enumerated"] > 100000
    assert len(doc["top"]) == 3
    steps = [layout["step_s"] for layout in doc["top"]]
    assert steps == sorted(steps)
    if result["seconds"] > 0.1:
        assert first is not None and last - first > 0.5 * result["seconds"]
    ref = program_json("search", "--top", "3", "--jobs", "1")
    assert [layout["step_s"] for layout in ref["top"]] == steps
    small = trainledger.search(set={"model.preset": "llama-3.1-8b", "cluster.nodes": 2}, top=1,
                               objective="memory")
    assert small["search"]["objective"] == "memory"
    with pytest.raises(trainledger.Error) as caught:
        trainledger.search(objective="speed")
    assert caught.value.option == "objective"


def test_sweep():
    doc = trainledger.sweep(DEFAULT, vary={"training.micro_batch": [1, 2]}, show=["peak", "fits"])
    assert doc["schema"] == "trainledger.sweep/1"
    assert [p["set"]["training.micro_batch"] for p in doc["points"]] == ["1", "2"]
    assert doc["points"][0]["values"]["peak"] < doc["points"][1]["values"]["peak"]


def test_diff():
    doc = trainledger.diff(DEFAULT, set={"parallel.zero": 0})
    assert doc["schema"] == "trainledger.diff/1"
    assert doc["b"]["peak_bytes"] > doc["a"]["peak_bytes"]
    with open(DEFAULT, "rb") as f:
        as_dict = tomllib.load(f)
    as_dict["parallel"]["zero"] = 0
    assert trainledger.diff(DEFAULT, as_dict)["b"]["peak_bytes"] == doc["b"]["peak_bytes"]


def test_explain():
    doc = trainledger.explain("optimizer.m", DEFAULT)
    assert doc["schema"] == "trainledger.explain/1"
    assert doc["item"]["id"] == "optimizer.m"
    assert doc["item"]["formula"]
    plan = trainledger.plan(DEFAULT)
    worst = plan["verdict"]["worst_stage"]
    items = {i["id"]: i for i in plan["memory"]["stages"][worst]["items"]}
    assert doc["item"]["value"] == items["optimizer.m"]["value"]
    with pytest.raises(trainledger.Error) as caught:
        trainledger.explain("no.such.item", DEFAULT)
    assert "no item" in str(caught.value)


def test_version():
    assert trainledger.__version__.count(".") == 2


def fenced_after(text, marker):
    """The fenced block that follows `marker` in a Markdown text."""
    rest = text[text.index(marker) + len(marker):]
    start = rest.index("```")
    start = rest.index("\n", start) + 1
    return rest[start:rest.index("```", start)]


def test_the_docs_example_runs_as_written():
    doc = (ROOT / "docs" / "python.md").read_text()
    code = fenced_after(doc, "<!-- python-example -->")
    expected = fenced_after(doc, "<!-- python-example-output -->")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout == expected


def test_the_module_is_the_one_under_test():
    """scripts/dev test names the scratch root the packages were unpacked into."""
    root = os.environ.get("TRAINLEDGER_EXPECT_MODULE_UNDER")
    if not root:
        pytest.skip("TRAINLEDGER_EXPECT_MODULE_UNDER not set")
    assert pathlib.Path(trainledger.__file__).resolve().is_relative_to(pathlib.Path(root).resolve())
    assert pathlib.Path(trainledger._core.__file__).name.startswith("_core.cpython-")


@pytest.mark.parametrize("call", [
    lambda: trainledger.plan(phase=3),
    lambda: trainledger.plan(units="tb"),
    lambda: trainledger.check(strict="yes"),
    lambda: trainledger.search(top=0),
    lambda: trainledger.search(gpus="8"),
    lambda: trainledger.search(jobs=10**30),
    lambda: trainledger.explain(None),
    lambda: trainledger.explain("optimizer.m", stage=-1),
    lambda: trainledger.sweep(vary={}),
    lambda: trainledger.diff(b=3.5),
    lambda: trainledger.plan({"model": {"preset": "llama-3.1-8b"}, 1: 2}),
    lambda: trainledger.plan({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": {"j": {
        "k": {"l": {"m": {"n": {"o": {"p": {"q": {"r": 1}}}}}}}}}}}}}}}}}}),
])
def test_every_bad_argument_is_an_error(call):
    """Wrong types and values raise trainledger.Error (never TypeError or a crash)."""
    with pytest.raises(trainledger.Error) as caught:
        call()
    assert caught.value.exit_code == 2


def test_presets():
    """models() and gpus() list what `trainledger models` and `gpus` print."""
    models = {m["preset"]: m for m in trainledger.models()}
    gpus = {g["preset"]: g for g in trainledger.gpus()}
    listed = subprocess.run([program(), "models"], capture_output=True, text=True, check=True)
    assert sorted(models) == sorted(line.split()[0] for line in listed.stdout.splitlines()[1:])
    assert models["llama-3.1-8b"]["params"] == 8030261248
    assert models["qwen3-30b-a3b"]["experts"] == 128
    listed = subprocess.run([program(), "gpus"], capture_output=True, text=True, check=True)
    rows = [line.split()[0] for line in listed.stdout.splitlines()[1:-1]]
    assert sorted(gpus) == sorted(rows)
    assert gpus["h100-sxm5-80gb"]["memory_bytes"] == 85520809984
    assert gpus["gb300-284gb"]["peak_flops"]["fp4"] == 15e15
    assert "fp4" not in gpus["h100-sxm5-80gb"]["peak_flops"]
    # A preset's name plans: the GPU's memory is the verdict's capacity.
    doc = trainledger.plan(set={"cluster.gpu": "h200-sxm-141gb"})
    assert doc["verdict"]["capacity_bytes"] == gpus["h200-sxm-141gb"]["memory_bytes"]
