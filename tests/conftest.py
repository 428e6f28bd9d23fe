"""Shared test configuration."""

from __future__ import annotations

import os

# litellm must never try the network from tests (DESIGN.md: it fetches a price list otherwise).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
