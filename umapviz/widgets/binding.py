"""Controls bound to a controller's traits: ``traitlets.link`` and ``dlink`` that hold the controller weakly.

A control lives in ipywidgets' registry until it is closed, and ``traitlets.link`` holds both of its ends: a
control linked that way would keep the controller (its worker thread, optimizer and frames) alive for the
kernel's life after the user dropped the panel (see lifetime.py). These links hold the control strongly and
the model (the controller's HasTraits) weakly; once the model is gone they do nothing.

Two more needs of the panels: a transform may answer ``KEEP`` to leave the other end as it is (None shown as
"nothing to show"), and a number above a linear slider's range widens the range before it is shown (a slider
clamps silently and would show a value that is not the one in use).
"""

from __future__ import annotations

import contextlib
import types
import weakref
from collections.abc import Callable
from typing import Any

from .._validation import is_real

KEEP = object()  # a transform's answer: leave the other end unchanged


def _same(value: Any) -> Any:
    return value


class WeakLink:
    """Keep ``control.<control_name>`` and ``model.<name>`` in sync, the model held weakly.

    The control shows the model's value from the start. A value the model refuses (its validator raises) goes to
    ``on_error`` (held weakly when it is a Python bound method) and the control shows the model's value again: an
    exception raised inside a widget callback would be lost in the kernel's log.

    Parameters
    ----------
    model : traitlets.HasTraits
        The controller's object that owns the trait; held weakly.
    name : str
        The model's trait.
    control : traitlets.HasTraits
        The control (an ipywidget); held strongly.
    control_name : str
        The control's trait, ``"value"`` by default.
    to_control, to_model : callable, optional
        Transforms of a value on its way; each may return ``KEEP`` to leave the other end as it is.
    one_way : bool
        Only model -> control (as ``traitlets.dlink``).
    on_error : callable, optional
        Called with the exception when the model refuses a value from the control.
    """

    def __init__(
        self,
        model: Any,
        name: str,
        control: Any,
        control_name: str = "value",
        *,
        to_control: Callable[[Any], Any] | None = None,
        to_model: Callable[[Any], Any] | None = None,
        one_way: bool = False,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> None:
        self._model = weakref.ref(model)
        self.name, self.control, self.control_name = name, control, control_name
        self._to_control = to_control or _same
        self._to_model = to_model or _same
        self._on_error = weakref.WeakMethod(on_error) if isinstance(on_error, types.MethodType) else (lambda: on_error)
        self._updating = False
        self._show(getattr(model, name))
        model.observe(self._model_changed, names=name)
        if not one_way:
            control.observe(self._control_changed, names=control_name)

    @contextlib.contextmanager
    def _busy(self):
        self._updating = True
        try:
            yield
        finally:
            self._updating = False

    def _show(self, value: Any) -> None:
        shown = self._to_control(value)
        if shown is KEEP:
            return
        with self._busy():
            try:
                widen(self.control, self.control_name, shown)
                setattr(self.control, self.control_name, shown)
            except Exception as exc:  # a value the control cannot show: said, and the control left as it was
                on_error = self._on_error()
                if on_error is None:
                    raise
                label = getattr(self.control, "description", "") or self.name
                on_error(ValueError(f"{label}={shown!r} cannot be shown in the panel: {exc}"))

    def _model_changed(self, change: Any) -> None:
        if not self._updating:
            self._show(change["new"])

    def _control_changed(self, change: Any) -> None:
        model = self._model()
        if self._updating or model is None:
            return
        value = self._to_model(change["new"])
        if value is KEEP:
            return
        with self._busy():
            try:
                setattr(model, self.name, value)
            except Exception as exc:
                setattr(self.control, self.control_name, change["old"])
                on_error = self._on_error()
                if on_error is None:
                    raise
                on_error(exc)

    def unlink(self) -> None:
        """Stop following both ends."""
        model = self._model()
        if model is not None:
            model.unobserve(self._model_changed, names=self.name)
        with contextlib.suppress(ValueError):
            self.control.unobserve(self._control_changed, names=self.control_name)


def widen(control: Any, name: str, value: Any) -> None:
    """Raise a linear slider's ``max`` to ``value`` when it lies beyond (a log slider's range is the view's to
    fit: its bounds are exponents).

    Parameters
    ----------
    control : ipywidgets.Widget
        The control about to show ``value``.
    name : str
        The control's trait that will show it (only ``"value"`` has a range).
    value : object
        The value about to be shown.
    """
    linear = name == "value" and hasattr(control, "max") and not hasattr(control, "base")
    if linear and is_real(value) and value > control.max:
        control.max = value


def link(model: Any, name: str, control: Any, control_name: str = "value", **options: Any) -> WeakLink:
    """A two-way ``WeakLink``.

    Parameters
    ----------
    model, name, control, control_name, **options
        As for ``WeakLink``.
    """
    return WeakLink(model, name, control, control_name, **options)


def dlink(model: Any, name: str, control: Any, control_name: str = "value", **options: Any) -> WeakLink:
    """A one-way ``WeakLink``, model -> control.

    Parameters
    ----------
    model, name, control, control_name, **options
        As for ``WeakLink``.
    """
    return WeakLink(model, name, control, control_name, one_way=True, **options)
