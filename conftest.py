"""Hooks for every pytest run from the repository root (``make test`` runs tests/ and notebooks/ together).

The run ends with one line saying what was skipped and why, so that a green run without a GPU or without
Chromium is not mistaken for a full one, e.g.
``skipped: 132 GPU tests (no GPU: CuPy is not installed), 3 browser tests (no Chromium at /usr/bin/chromium)``.
"""

from __future__ import annotations

from collections import Counter

import pytest

pytest_plugins = ("pytester",)  # tests/test_skip_summary.py runs small pytest sessions of its own

# Markers whose skipped tests are counted under one name, whatever each one's reason says in detail.
SKIP_GROUPS = (("gpu", "GPU tests"), ("browser", "browser tests"))


def _skip_reason(report) -> str:
    """The reason pytest gives for a skipped test, without its "Skipped: " prefix."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def skip_summary(reports) -> str:
    """One line naming what was skipped and why: tests marked gpu and browser are counted as "GPU tests" and
    "browser tests", the others per reason; "skipped: nothing" when every collected test ran.

    Parameters
    ----------
    reports : iterable of pytest.TestReport
        The skipped tests' reports (the terminal reporter's ``stats["skipped"]``).
    """
    counts: Counter = Counter()
    for report in reports:
        keywords = getattr(report, "keywords", {})  # a module skipped whole reports no markers
        name = next((label for marker, label in SKIP_GROUPS if marker in keywords), "other tests")
        counts[name, _skip_reason(report)] += 1
    if not counts:
        return "skipped: nothing (every collected test ran)"
    parts = [f"{n} {name if n > 1 else name.removesuffix('s')} ({reason})" for (name, reason), n in counts.items()]
    return "skipped: " + ", ".join(parts)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Write :func:`skip_summary`'s line after pytest's own summaries (a wrapper: after the short test summary
    too), so it lands just above the final counts."""
    result = yield
    if not terminalreporter.config.option.collectonly:  # nothing ran, so nothing was skipped
        terminalreporter.write_line(skip_summary(terminalreporter.stats.get("skipped", [])))
    return result
