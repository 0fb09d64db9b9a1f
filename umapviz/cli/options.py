"""The command line's parser: its options, argparse types that say what a bad value should be, and API error
messages said with the flags the user typed."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from .._validation import check_random_state
from ..optimize.chunks import RULES, check_n_chunks
from ..optimize.optimizer import STRATEGIES
from .compare import COMPARE_CHUNKS, COMPARE_SEEDS
from .demo import DEFAULT_CHUNKS
from .steps import REFERENCES

# Errors from the Python API name its parameters ("n_neighbors=1 is too small"); the commands' users typed flags.
# Parameters with an underscore are names wherever they appear; device, init and repeat are words too, so only
# their "device=..." form is one. "n_epochs=None" (the default) is "leave out --n-epochs" on the command line.
_API_NAMES = re.compile(
    r"\b(?:(n_samples|n_chunks|n_neighbors|n_epochs|random_state|label_column)\b|(device|init|repeat)(?==))(=None\b|=)?"
)


def _name_flags(message: str) -> str:
    """An API error message with each parameter (``n_neighbors=1``) said as its flag (``--n-neighbors 1``)."""

    def flag(match: re.Match) -> str:
        name = "--" + (match[1] or match[2]).replace("_", "-")
        if match[3] == "=None":
            return f"leave out {name}"
        return name + (" " if match[3] else "")

    return _API_NAMES.sub(flag, message)


def _value(parse: Callable[[str], Any], what: str) -> Callable[[str], Any]:
    """An argparse type: one value through ``parse``, or an error that says what was expected."""

    def parse_one(text: str) -> Any:
        try:
            return parse(text.strip())
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text.strip()!r} is not {what}.") from None

    return parse_one


def _comma_list(parse_one: Callable[[str], Any]) -> Callable[[str], list]:
    """An argparse type: comma-separated values, each through ``parse_one``; a typo fails before any work."""
    return lambda text: [parse_one(part) for part in text.split(",")]


def _strategy(name: str) -> str:
    if name not in STRATEGIES:
        raise ValueError(name)
    return name


_n_chunks = _value(
    lambda text: check_n_chunks(int(text) if text.isdigit() else text),
    f"an n_chunks value: use whole numbers >= 1 or {', '.join(RULES)}",
)
_parse_chunks = _comma_list(_n_chunks)
_seed = _value(lambda text: check_random_state(int(text)), "a seed: use whole numbers from 0 to 2**32 - 1")
_parse_seeds = _comma_list(_seed)
_parse_strategies = _comma_list(_value(_strategy, f"a strategy: use {', '.join(STRATEGIES)}"))


def _common_options() -> argparse.ArgumentParser:
    """The options every command takes: the data, its graph, the layouts' length and start, the device."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dataset", default=None, help="dataset name or file path (default: the kit's default)")
    common.add_argument(
        "--label-column",
        default=None,
        metavar="NAME",
        help="the column of a CSV/Parquet file (or array of an .npz) that holds the classes "
        "(default: one named label, labels, target or class, in any case)",
    )
    common.add_argument(
        "--n-samples",
        type=int,
        default=None,
        help="points to make (synthetic datasets) or keep (a subsample of real data)",
    )
    common.add_argument("--n-neighbors", type=int, default=15, help="neighbours per point, itself included")
    common.add_argument("--n-epochs", type=int, default=None, help="default: 500 up to 10,000 points, else 200")
    common.add_argument("--init", default="spectral", choices=["spectral", "random"])
    common.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    return common


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="umapviz", description="See how UMAP's layout optimizer behaves.")
    sub = parser.add_subparsers(dest="command", required=True)
    common = [_common_options()]
    reference = argparse.ArgumentParser(add_help=False)
    reference.add_argument(
        "--reference",
        default=None,
        choices=REFERENCES,
        help="the layout outliers are counted against (default: sequential on the CPU, hogwild "
        "on the GPU, where sequential runs on one thread)",
    )
    demo = sub.add_parser(
        "demo", parents=[*common, reference], help="compare strategies on a dataset and print a table"
    )
    demo.add_argument(
        "--n-chunks",
        type=_parse_chunks,
        default=list(DEFAULT_CHUNKS),
        help="comma-separated n_chunks values for the chunked runs (ints, auto, shipped, degree)",
    )
    demo.add_argument("--random-state", type=int, default=0)
    demo.add_argument("--out", default=None, help="folder for figures (PNG side by side)")

    compare = sub.add_parser(
        "compare",
        parents=[*common, reference],
        help="chunked runs for several n_chunks and layout seeds: which are clean on every seed",
    )
    compare.add_argument(
        "--n-chunks",
        type=_parse_chunks,
        default=list(COMPARE_CHUNKS),
        help="comma-separated n_chunks values (ints, auto, shipped, degree; 1 is buffered)",
    )
    compare.add_argument(
        "--seeds", type=_parse_seeds, default=list(COMPARE_SEEDS), help="comma-separated layout seeds (default 0,1,2)"
    )
    compare.add_argument("--random-state", type=int, default=0, help="seed of the data and graph")
    compare.add_argument("--out", default=None, help="folder for the figure (compare.png, a row per seed)")

    bench = sub.add_parser(
        "bench", parents=common, help="time per epoch of each strategy on this machine, against hogwild"
    )
    bench.add_argument(
        "--strategies",
        type=_parse_strategies,
        default=None,
        help="comma-separated strategies (default: all; on the GPU all but the one-thread sequential)",
    )
    bench.add_argument(
        "--n-chunks",
        type=_n_chunks,
        default="auto",
        help="the chunked run's n_chunks (an int, auto, shipped or degree)",
    )
    bench.add_argument("--random-state", type=int, default=0)
    bench.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of each strategy; 2 or more also checks that the runs repeat their bytes",
    )
    return parser
