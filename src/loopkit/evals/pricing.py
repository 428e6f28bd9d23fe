"""What a run cost, from litellm's model price table.

Input, output, cache reads and cache writes are priced apart (loopkit's ``input_tokens`` counts
all input tokens, cache reads and writes included, as litellm's ``prompt_tokens`` does). A model
the table does not know has no price: its cost is ``None`` and the note says "no price for model
X" instead of a guess. The scripted model costs 0 and says "scripted". litellm is imported only
for a model that is not scripted (it takes seconds), offline (its local price table).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from loopkit.cards.config import SCRIPTED

__all__ = ["Price", "price_for"]


class Price(BaseModel):
    """Dollars per token of one model (None: the model has no price here, see ``note``)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    input: float | None = None
    output: float | None = None
    #: A cache read; without a price of its own, the input price.
    cache_read: float | None = None
    #: A cache write; without a price of its own, the input price (OpenAI bills no premium).
    cache_write: float | None = None
    #: "scripted", "litellm price table (<key>)" or "no price for model X ...".
    note: str

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None

    def cost(self, totals: dict[str, Any]) -> float | None:
        """The dollars of a run's ``totals`` (``input_tokens``, ``output_tokens``,
        ``cached_input_tokens``, ``cache_creation_input_tokens``); None without a price."""
        if self.input is None or self.output is None:
            return None
        total_in = int(totals.get("input_tokens", 0))
        cached = int(totals.get("cached_input_tokens", 0))
        written = int(totals.get("cache_creation_input_tokens", 0))
        plain = max(0, total_in - cached - written)
        read_price = self.input if self.cache_read is None else self.cache_read
        write_price = self.input if self.cache_write is None else self.cache_write
        return (
            plain * self.input
            + cached * read_price
            + written * write_price
            + int(totals.get("output_tokens", 0)) * self.output
        )


def price_for(model: str) -> Price:
    """The price of ``model`` (a litellm model string, or ``scripted``)."""
    if model == SCRIPTED:
        return Price(model=model, input=0.0, output=0.0, note="scripted")
    from loopkit.providers.litellm import load_litellm

    litellm = load_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises its own errors (or a plain one) for an unknown model
        return Price(
            model=model,
            note=f"no price for model {model} in litellm's price table; its cost is not counted",
        )
    input_price = info.get("input_cost_per_token")
    output_price = info.get("output_cost_per_token")
    if input_price is None or output_price is None:
        return Price(model=model, note=f"no price for model {model} in litellm's price table")
    return Price(
        model=model,
        input=float(input_price),
        output=float(output_price),
        cache_read=_number(info.get("cache_read_input_token_cost")),
        cache_write=_number(info.get("cache_creation_input_token_cost")),
        note=f"litellm price table ({info.get('key') or model})",
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None
