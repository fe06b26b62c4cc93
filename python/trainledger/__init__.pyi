# Type stubs of the trainledger package (docs/python.md).
import os
from typing import Any, Mapping, Sequence, Union

Plan = Union[None, str, os.PathLike[str], Mapping[str, Any]]
Sets = Union[None, str, Sequence[str], Mapping[str, Union[str, int, float, bool]]]
Paths = Union[None, str, os.PathLike[str], Sequence[Union[str, os.PathLike[str]]]]
Share = Union[str, float]
Document = dict[str, Any]

__version__: str
commit: str

class Error(ValueError):
    """An invalid plan or argument, or a failure: the program's located message."""

    file: str | None
    option: str | None
    line: int | None
    column: int | None
    key: str | None
    errors: list[dict[str, Any]]
    exit_code: int

def plan(
    plan: Plan = None,
    *,
    set: Sets = None,
    calibration: Paths = None,
    headroom: Share = "10%",
    confidence: Share | None = "90%",
    phase: str | None = None,
    max: str | None = None,
    keep: str = "global_batch",
    units: str = "gib",
    base_dir: str | os.PathLike[str] | None = None,
) -> Document: ...
def check(
    plan: Plan = None,
    *,
    set: Sets = None,
    calibration: Paths = None,
    capacity: Share | None = None,
    headroom: Share = "10%",
    confidence: Share | None = "90%",
    strict: bool = False,
    units: str = "gib",
    base_dir: str | os.PathLike[str] | None = None,
) -> Document: ...
def search(
    plan: Plan = None,
    *,
    gpus: int = 0,
    nodes: int = 0,
    objective: str = "step-time",
    top: int = 10,
    fix: str | Sequence[str] | None = None,
    allow: str | Sequence[str] | None = None,
    jobs: int = 0,
    headroom: Share = "10%",
    confidence: Share | None = "90%",
    fewest: bool = False,
    target_step_time: str | None = None,
    target_time_to_train: str | None = None,
    set: Sets = None,
    calibration: Paths = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Document: ...
def sweep(
    plan: Plan = None,
    *,
    vary: str | Sequence[str] | Mapping[str, Any],
    show: str | Sequence[str] | None = None,
    set: Sets = None,
    calibration: Paths = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Document: ...
def diff(
    a: Plan = None,
    b: Plan = None,
    *,
    set: Sets = None,
    calibration: Paths = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Document: ...
def explain(
    item: str,
    plan: Plan = None,
    *,
    stage: int | None = None,
    phase: str | None = None,
    set: Sets = None,
    calibration: Paths = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Document: ...
def models() -> list[dict[str, Any]]: ...
def gpus() -> list[dict[str, Any]]: ...
