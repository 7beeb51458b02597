"""``python -m presentation_dependence.cli ARGS`` = ``presdep ARGS`` (also under ``accelerate launch -m``)."""

from __future__ import annotations

from presentation_dependence.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
