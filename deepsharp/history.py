"""History: what `fit` returns, one dict of logs per epoch, and its curves as a picture."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Sequence

from deepsharp.errors import MissingExtra, SpecError

PLOT_FORMATS = {".png": "png", ".svg": "svg"}


class History(list):
    """One dict per epoch (epoch, loss, metrics, val_loss, val metrics, lr, seconds);
    `history["loss"]` is the list of one key over the epochs (None in an epoch without it); a key
    no epoch holds raises KeyError naming the keys there are."""

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            known = self.keys()
            if key not in known:
                raise KeyError(f"history has no {key!r}; its keys are: "
                               f"{', '.join(known) if known else 'none (no epoch was recorded)'}")
            return [logs.get(key) for logs in self]
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        """Every key of every epoch, in the order they first appear."""
        seen: dict[str, None] = {}
        for logs in self:
            seen.update(dict.fromkeys(logs))
        return list(seen)

    def plot(self, path: Any, keys: Sequence[str] | None = None) -> None:
        """Write the curves of `keys` (default: the loss and every metric, each beside its
        validation curve) over the epochs as a PNG or SVG picture, by `path`'s suffix. Needs
        matplotlib (`pip install "deepsharp[plot]"`); the file is written atomically."""
        from deepsharp.io import write_atomic

        target = Path(path)
        form = PLOT_FORMATS.get(target.suffix.lower())
        if form is None:
            raise SpecError(f"History.plot: {str(path)!r} must end in .png or .svg")
        names = list(keys) if keys is not None else self._curves()
        for name in names:
            self[name]  # raises KeyError naming the known keys
        figure = _figure(self, names)
        buffer = io.BytesIO()
        figure.savefig(buffer, format=form)
        write_atomic(target, buffer.getvalue())

    def _curves(self) -> list[str]:
        """The keys worth a curve: every number but the epoch, the rate and the time."""
        return [k for k in self.keys() if k not in ("epoch", "seconds", "lr")
                and not k.startswith("val_")]


def _figure(history: History, names: list[str]):
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtra("History.plot needs matplotlib, an optional extra: "
                           "pip install \"deepsharp[plot]\"") from None
    figure = Figure(figsize=(5.0, 2.6 * max(1, len(names))), layout="constrained")
    epochs = history["epoch"] if "epoch" in history.keys() else list(range(1, len(history) + 1))
    for row, name in enumerate(names):
        axes = figure.add_subplot(len(names), 1, row + 1)
        for key in (name, f"val_{name}"):
            if key in history.keys():
                points = [(e, v) for e, v in zip(epochs, history[key]) if v is not None]
                axes.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=key)
        axes.set_xlabel("epoch")
        axes.set_ylabel(name)
        axes.legend()
    return figure
