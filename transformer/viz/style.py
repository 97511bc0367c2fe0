"""The pictures' colours and type sizes, in one place (the app's page takes its CSS colours from
ui/static/)."""
from __future__ import annotations

# Okabe & Ito's colour-blind-safe palette, in the order heads, curves and series take it
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")
MASK_COLOR = "#9e9e9e"      # masked (future) cells: a fixed grey under a white hatch, unlike any value
# the query row a view follows: magenta, unlike the ends of every colour scale offered
QUERY_OUTLINE = "#FF00FF"
MASK_COLOR_GREYS = "#c9a66b"   # ... a muted tan where the scale itself is grey
BASE_FONT, PRESENTER_FONT = 14, 28   # figure type size (px): normal and presenter mode (the least a
                                     # projector's back row reads at 1920×1080: every text of a figure)
