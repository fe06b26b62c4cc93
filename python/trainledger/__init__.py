"""trainledger: a planner for distributed LLM training, from Python (docs/python.md).

Each function runs one of the program's commands in this process, over the same core, and
returns that command's JSON document as a dict (docs/json-schema.md): ``plan`` returns
``trainledger.plan/2``, ``check`` ``trainledger.check/2``, ``search`` ``trainledger.search/1``,
``sweep`` ``trainledger.sweep/1``, ``diff`` ``trainledger.diff/1`` and ``explain``
``trainledger.explain/1``: the same numbers as ``trainledger plan --format json`` and the others.

A plan is one of:

- ``None`` (or ``"default"``): the embedded default plan (configs/plans/default.toml);
- a path (``str`` or ``os.PathLike``) to a plan file;
- TOML text (a ``str`` holding a newline or an ``=``), named ``(string)`` in messages;
- a ``dict`` of the plan file's sections (``{"model": {"preset": "llama-3.1-8b"}, ...}``),
  named ``(dict)``.

Relative paths inside a text or dict plan (``model.hf_config``) resolve against ``base_dir``
(default: the current directory) and, as a plan file's do inside its folder, stay inside it.

``set`` takes ``{"training.micro_batch": 2}``, ``"training.micro_batch=2"`` or a list of such
strings, as ``--set`` does. Every error (a typo in a plan, a value out of range, a bad
argument) raises :class:`Error`, whose text is the program's located message and whose
attributes say where: ``file``, ``line``, ``column``, ``key``, ``option``, every error in
``errors`` and the program's ``exit_code``. The GIL is released while a command runs.
"""

from __future__ import annotations

from . import _core
from ._core import Error, __version__, commit

__all__ = ["Error", "__version__", "commit", "plan", "check", "search", "sweep", "diff",
           "explain", "models", "gpus"]


def plan(plan=None, *, set=None, calibration=None, headroom="10%", confidence="90%",
         phase=None, max=None, keep="global_batch", units="gib", base_dir=None):
    """The plan's ledger: ``trainledger plan --format json`` (schema ``trainledger.plan/2``).

    Args:
        plan: a path, TOML text, a dict of the plan's sections, or None (the default plan).
        set: overrides, as ``--set``: a dict ``{"section.key": value}`` or ``"KEY=VALUE"`` strings.
        calibration: a calibration profile's path, or a list of them (later ones win).
        headroom: the share of the GPU memory kept free (``"10%"`` or 0.1).
        confidence: the bands' confidence (``"90%"`` or 0.9); None or ``"off"``: the estimate alone.
        phase: every stage's ledger in this phase (init, forward, backward, optimizer,
            checkpoint) instead of at its peak.
        max: ``"micro_batch"`` or ``"seq_len"``: the largest that fits (the document gains a
            ``search`` section).
        keep: with ``max="micro_batch"``: ``"global_batch"`` (default) or ``"accum"``.
        units: ``"gib"`` or ``"gb"`` (only what is printed as text; numbers are in bytes).
        base_dir: the folder a text or dict plan's relative paths resolve against.
    """
    return _core.plan(plan=plan, set=set, calibration=calibration, headroom=headroom,
                      confidence=confidence, phase=phase, max=max, keep=keep, units=units,
                      base_dir=base_dir)


def check(plan=None, *, set=None, calibration=None, capacity=None, headroom="10%",
          confidence="90%", strict=False, units="gib", base_dir=None):
    """The CI gate on one plan: ``trainledger check --format json`` (``trainledger.check/2``).

    The document's ``exit_code`` is the program's (0 fits, 1 near or over, 4 unsure under
    ``strict``); ``plans[0]["status"]`` says which. An invalid plan raises :class:`Error`.

    Args:
        capacity: the memory to check against (``"80 GiB"``); None: the plan's GPU's.
        strict: a plan that fits but rests on a guess fails (exit code 4).
        Others: as :func:`plan`.
    """
    return _core.check(plan=plan, set=set, calibration=calibration, capacity=capacity,
                       headroom=headroom, confidence=confidence, strict=strict, units=units,
                       base_dir=base_dir)


def search(plan=None, *, gpus=0, nodes=0, objective="step-time", top=10, fix=None, allow=None,
           jobs=0, headroom="10%", confidence="90%", fewest=False, target_step_time=None,
           target_time_to_train=None, set=None, calibration=None, base_dir=None):
    """Every layout of the plan on its cluster: ``trainledger search --format json``
    (``trainledger.search/1``: ``top`` and ``pareto`` lists of layouts). The GIL is released
    while it runs on ``jobs`` threads (0: every core).

    Args:
        gpus, nodes: search on this many GPUs or nodes (0: the plan's cluster).
        objective: ``"step-time"``, ``"tokens-per-s"``, ``"memory"`` or ``"cost"``.
        top: layouts to list.
        fix: ``"tp=8"`` or a list of such: knobs held at one value.
        allow: ``"zero=1,3"`` or a list of such: the values a knob may take.
        fewest: the fewest nodes on which a layout fits (and meets a target).
        target_step_time, target_time_to_train: with ``fewest``: ``"2s"``, ``"30d"``.
        Others: as :func:`plan`.
    """
    return _core.search(plan=plan, gpus=gpus, nodes=nodes, objective=objective, top=top,
                        fix=fix, allow=allow, jobs=jobs, headroom=headroom,
                        confidence=confidence, fewest=fewest, target_step_time=target_step_time,
                        target_time_to_train=target_time_to_train, set=set,
                        calibration=calibration, base_dir=base_dir)


def sweep(plan=None, *, vary, show=None, set=None, calibration=None, base_dir=None):
    """The plan over a grid of knobs: ``trainledger sweep --format json``
    (``trainledger.sweep/1``: one point per combination, with its values or its error).

    Args:
        vary: ``{"training.seq_len": [2048, 4096], ...}`` or ``"KEY=V1,V2"`` strings.
        show: the quantities per point (``"peak"``, ``"fits"`` or item ids), a list or a
            comma-separated string; None: peak, fits, step time, tokens/s per GPU, MFU.
        Others: as :func:`plan`.
    """
    return _core.sweep(plan=plan, vary=vary, show=show, set=set, calibration=calibration,
                       base_dir=base_dir)


def diff(a=None, b=None, *, set=None, calibration=None, base_dir=None):
    """Two plans item by item: ``trainledger diff --format json`` (``trainledger.diff/1``).

    Args:
        a: plan A (as :func:`plan`'s ``plan``; None: the default plan).
        b: plan B; None: A with ``set`` applied (``set`` changes B only).
        Others: as :func:`plan`.
    """
    return _core.diff(a=a, b=b, set=set, calibration=calibration, base_dir=base_dir)


def explain(item, plan=None, *, stage=None, phase=None, set=None, calibration=None,
            base_dir=None):
    """How one item is computed: ``trainledger explain ITEM --format json``
    (``trainledger.explain/1``: the item with its formula, terms, source and kind, where it was
    found, and the link inputs its time read).

    Args:
        item: an item id, e.g. ``"optimizer.m"`` or ``"time.step"``.
        stage: the pipeline stage for memory items (None: the worst).
        phase: the phase for memory items (None: the stage's peak phase).
        Others: as :func:`plan`.
    """
    return _core.explain(item=item, plan=plan, stage=stage, phase=phase, set=set,
                         calibration=calibration, base_dir=base_dir)


def models():
    """The model presets (``trainledger models``): a list of dicts with ``preset`` (the name a
    plan's ``model.preset`` takes), ``name``, ``params`` (the total count), ``layers``,
    ``hidden``, ``heads``, ``kv_heads``, ``ffn``, ``vocab``, ``experts``, ``experts_per_token``,
    ``expert_ffn``, ``summary`` and ``source``."""
    return _core.models()


def gpus():
    """The GPU presets (``trainledger gpus``): a list of dicts with ``preset`` (the name
    ``cluster.gpu`` takes), ``name`` (the device's), ``memory_bytes`` (as the device reports
    it), ``memory_bandwidth`` (bytes/s), ``peak_flops`` (dense FLOP/s per precision the preset
    gives: fp32, tf32, bf16, fp16, fp8, fp6, fp4), ``summary`` and ``source``."""
    return _core.gpus()
