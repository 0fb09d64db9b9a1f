"""umap-learn's own estimator tests as the measure of umapviz.UMAP's compatibility.

Usage: ``python bench/umap_peer_tests.py PATH_TO_UMAP_CHECKOUT [--commit e82ed0d] [--json out.json]``

umap-learn's tests are not in its wheel, and this repository vendors none of them: PATH is a git checkout of
https://github.com/lmcinnes/umap (bench/README.md says how to get one). The test files below are read from its
``--commit`` (``git show``), their relative imports of the ``umap`` package made absolute, into a temporary
folder; pytest runs them there with bench/umap_peer_plugin.py, which substitutes ``umapviz.UMAP`` for
``umap.UMAP`` before collection. Prints one row per file (passed / failed / errors) and each failure's first
line of cause; ``--json`` writes every test's outcome.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

# The test files whose tests construct umap.UMAP estimators (the others test umap-learn's functions, its
# AlignedUMAP, ParametricUMAP or plotting).
FILES = [
    "conftest.py",
    "test_composite_models.py",
    "test_data_input.py",
    "test_densmap.py",
    "test_umap_get_feature_names_out.py",
    "test_umap_on_iris.py",
    "test_umap_ops.py",
    "test_umap_repeated_data.py",
    "test_umap_trustworthiness.py",
    "test_umap_validation_params.py",
]


def extract(checkout: Path, commit: str, into: Path) -> None:
    """The test files at ``commit`` into ``into/umap_peer`` (a package), relative imports made absolute."""
    package = into / "umap_peer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in FILES:
        text = subprocess.run(
            ["git", "-C", str(checkout), "show", f"{commit}:umap/tests/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        text = re.sub(r"from \.\.(\w)", r"from umap.\1", text)
        text = re.sub(r"from \.\. import", "from umap import", text)
        (package / name).write_text(text)


def summarise(junit: Path) -> tuple[dict, list]:
    """Per file {passed, failed, errors, skipped} and every test's (file, name, outcome, cause)."""
    per_file: dict[str, dict[str, int]] = {}
    tests = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = case.get("classname", "").split(".")[-1] + ".py"
        outcome, cause = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed", "error": "errors"}.get(tag, tag)
                cause = (node.get("message") or "").strip().splitlines()[0][:200] if node.get("message") else ""
        per_file.setdefault(file, {"passed": 0, "failed": 0, "errors": 0, "skipped": 0})[outcome] += 1
        tests.append((file, case.get("name"), outcome, cause))
    return per_file, tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a git checkout of github.com/lmcinnes/umap")
    parser.add_argument("--commit", default="e82ed0d", help="the commit whose tests run (default e82ed0d)")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (e.g. -k iris)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        extract(args.checkout, args.commit, tmp)
        junit = tmp / "junit.xml"
        here = Path(__file__).resolve().parent
        env_path = f"{here}:{Path(__file__).resolve().parents[1]}"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "umap_peer_plugin",
                f"--junitxml={junit}",
                "-o",
                "junit_family=xunit1",
                "umap_peer",
                *args.pytest_args,
            ],
            cwd=tmp,
            env={**__import__("os").environ, "PYTHONPATH": env_path},
            check=False,
        )
        per_file, tests = summarise(junit)
    total = {k: sum(f[k] for f in per_file.values()) for k in ("passed", "failed", "errors", "skipped")}
    print(f"\n{'file':40} passed failed errors skipped")
    for file, counts in sorted(per_file.items()):
        print(f"{file:40} {counts['passed']:6} {counts['failed']:6} {counts['errors']:6} {counts['skipped']:7}")
    print(f"{'total':40} {total['passed']:6} {total['failed']:6} {total['errors']:6} {total['skipped']:7}")
    for file, name, outcome, cause in tests:
        if outcome in ("failed", "errors"):
            print(f"  {outcome}: {file}::{name}: {cause}")
    if args.json:
        args.json.write_text(json.dumps({"per_file": per_file, "tests": tests}, indent=1))


if __name__ == "__main__":
    main()
