"""The line the root conftest.py writes at the end of a run: what was skipped and why."""

from __future__ import annotations

from pathlib import Path

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

SKIPPING_TESTS = """
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")


@pytest.mark.gpu
@pytest.mark.skip(reason="no GPU: CuPy is not installed")
def test_gpu_one():
    pass


@pytest.mark.gpu
@pytest.mark.skip(reason="no GPU: CuPy is not installed")
def test_gpu_two():
    pass


@pytest.mark.browser
@pytest.mark.skip(reason="no Chromium at /usr/bin/chromium")
def test_browser():
    pass


def test_nvcc():
    pytest.skip("nvcc is not on PATH")


def test_runs():
    pass
"""


def test_a_run_ends_with_what_was_skipped_and_why(pytester):
    pytester.makeconftest(ROOT_CONFTEST.read_text())
    pytester.makepyfile(test_some=SKIPPING_TESTS)
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=4)
    lines = result.outlines
    assert lines[-2] == (
        "skipped: 2 GPU tests (no GPU: CuPy is not installed), 1 browser test (no Chromium at "
        "/usr/bin/chromium), 1 other test (nvcc is not on PATH)"
    )
    assert lines[-1].startswith("1 passed, 4 skipped")


def test_a_run_without_skips_says_so(pytester):
    pytester.makeconftest(ROOT_CONFTEST.read_text())
    pytester.makepyfile(test_some="def test_runs():\n    pass\n")
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.outlines[-2] == "skipped: nothing (every collected test ran)"
