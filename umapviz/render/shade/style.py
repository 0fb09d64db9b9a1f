"""The look of a shaded image: the class palette, the density colour map, and ``Style`` (colours, outlier discs,
markers, datashader's options)."""

from __future__ import annotations

from dataclasses import dataclass, field

from umapviz._validation import is_integer

# Colour-blind-safe classes on a dark background: Okabe & Ito's palette without black (the background) and
# vermillion (too close to the outlier red), then Paul Tol's "light" palette. Beyond 15 classes colours
# repeat: no palette keeps that many classes apart for every reader.
CLASS_PALETTE = (
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#CC79A7",
    "#77AADD",
    "#EE8866",
    "#EEDD88",
    "#FFAABB",
    "#99DDFF",
    "#44BB99",
    "#BBCC33",
    "#AAAA00",
    "#DDDDDD",
)
# Unlabelled density: dark to pale blue, far from the outlier red in every kind of colour vision.
COUNT_CMAP = ("#16306b", "#2a5caa", "#4f9bd9", "#a9d8f5")


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """'#RRGGBB' -> (r, g, b)."""
    text = color[1:] if isinstance(color, str) and color.startswith("#") else None
    if text is None or len(text) != 6 or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise ValueError(f"colour {color!r} is not of the form '#RRGGBB' (e.g. '#ff2020').")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


OUTLIER_FILLS = ("class", "outlier")


@dataclass(frozen=True)
class Style:
    """How grids become colours. Colours are '#RRGGBB' strings."""

    cmap: tuple[str, ...] = COUNT_CMAP
    palette: tuple[str, ...] = CLASS_PALETTE
    background: str = "#000000"
    outlier_color: str = "#FF2020"  # the ring marking a flung point (its disc too without labels), off-view marks
    halo_color: str = "#FFFFFF"  # thin outer ring of each outlier mark, and the off-view counts' text
    outlier_radius: int | None = None  # disc radius in pixels; None: 0.5% of the image size, at least 3
    # An outlier's disc: "class", the colour of its class where the data has labels (see draw_outliers), else
    # outlier_color; "outlier", outlier_color always (one colour for every flung point).
    outlier_fill: str = "class"
    outlier_ring: int = 2  # width in pixels of the outlier_color ring around a class-coloured disc
    how: str = "eq_hist"  # datashader's colour normalisation: "eq_hist", "log", "cbrt" or "linear"
    min_alpha: int = 120  # alpha of the least dense non-empty pixel: one ordinary point stays visible
    edge_markers: bool = True
    # Write the off-view counts beside the border triangles and their total in a corner. False: the triangles
    # alone, for a view that lays the counts out beside the image, where no point can cover them.
    edge_text: bool = True
    # Sparse images (few thousand points) grow each lit pixel into its empty neighbours, like datashader's
    # dynspread: done when fewer than this fraction of lit pixels touch another lit pixel. 0 turns it off.
    spread_threshold: float = 0.5
    # More keyword arguments for datashader's tf.shade (e.g. rescale_discrete_levels): given any, the points
    # are shaded by datashader itself, on the host (slower; CuPy grids are copied there first).
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Checked here, not when the first frame is shaded: a bad min_alpha wrapped silently in uint8 (300 drew
        # the sparsest pixels almost black) and an empty palette failed as a ZeroDivisionError.
        for name in ("cmap", "palette"):
            colors = getattr(self, name)
            if isinstance(colors, str) or not len(colors):
                raise ValueError(
                    f"Style {name} must be a non-empty sequence of '#RRGGBB' colours, e.g. "
                    f"{name}=('#16306b', '#a9d8f5'); got {colors!r}."
                )
            for color in colors:
                hex_to_rgb(color)
        for name in ("background", "outlier_color", "halo_color"):
            hex_to_rgb(getattr(self, name))
        if not is_integer(self.min_alpha) or not 0 <= self.min_alpha <= 255:
            raise ValueError(f"Style min_alpha={self.min_alpha!r} must be an int in [0, 255].")
        if self.outlier_radius is not None and (not is_integer(self.outlier_radius) or self.outlier_radius < 0):
            raise ValueError(f"Style outlier_radius={self.outlier_radius!r} must be None or an int >= 0 (pixels).")
        if self.outlier_fill not in OUTLIER_FILLS:
            raise ValueError(f"Style outlier_fill={self.outlier_fill!r} must be one of {OUTLIER_FILLS}.")
        if not is_integer(self.outlier_ring) or self.outlier_ring < 0:
            raise ValueError(f"Style outlier_ring={self.outlier_ring!r} must be an int >= 0 (pixels; 0: no ring).")
        if not 0 <= self.spread_threshold <= 1:
            raise ValueError(f"Style spread_threshold={self.spread_threshold!r} must lie in [0, 1] (0 turns it off).")
        clash = sorted({"how", "min_alpha", "cmap", "color_key", "color_baseline"} & set(self.extra))
        if clash:
            raise ValueError(f"Style extra must not repeat {clash}: set them as Style fields (e.g. Style(how=...)).")


DEFAULT_STYLE = Style()
# For views that write the off-view counts beside the image (a live view's title, a panel's caption row):
# the border triangles alone, no text where points could cover it or a corner's two counts collide.
PANEL_STYLE = Style(edge_text=False)


def class_colors(n_labels: int, palette: tuple[str, ...] = CLASS_PALETTE) -> list[str]:
    """One colour per label code 0..n_labels-1 (the palette repeats when there are more labels)."""
    return [palette[i % len(palette)] for i in range(n_labels)]


def outlier_radius(style: Style, width: int, height: int) -> int:
    if style.outlier_radius is not None:
        return max(0, int(style.outlier_radius))
    return max(3, round(min(width, height) / 200))  # large enough for a class colour to read inside its ring
