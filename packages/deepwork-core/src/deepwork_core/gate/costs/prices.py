"""What a model's tokens cost: the default prices and `quality_gate.prices` over them
(docs/quality-gate.md, "Prices").

A price is USD per million tokens of input, output, cache reads and cache writes. A model name
finds the entry whose name is the longest one it starts with (`claude-sonnet-4-5-20250929`
finds `claude-sonnet`); the project's table wins over the defaults, entry by entry. A task
whose model is not named (`quality_gate.models` left empty) is priced as its runner's default
model. The defaults are the providers' list prices for the models the three runners name; they
change, so a project that pays other prices writes its own.

Prices serve two figures: the estimate before a run, and the cost counted against the day cap
of a call whose CLI reports none (codex and gemini), priced from the tokens it reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from deepwork_core.base.config import ModelPrice
from deepwork_core.state.usage.pair import RequestUsage


def _price(inp: float, out: float, read: float, write: float) -> ModelPrice:
    return ModelPrice(input=inp, output=out, cache_read=read, cache_write=write)


#: List prices, USD per million tokens (input, output, cache read, cache write).
DEFAULT_PRICES: Final[dict[str, ModelPrice]] = {
    # Anthropic (the claude runner); the CLI's aliases `opus`, `sonnet`, `haiku` too.
    "claude-opus-4-0": _price(15, 75, 1.5, 18.75),
    "claude-opus-4-1": _price(15, 75, 1.5, 18.75),
    "claude-opus-4-2025": _price(15, 75, 1.5, 18.75),
    "claude-opus": _price(5, 25, 0.5, 6.25),
    "opus": _price(5, 25, 0.5, 6.25),
    "claude-sonnet": _price(3, 15, 0.3, 3.75),
    "sonnet": _price(3, 15, 0.3, 3.75),
    "claude-haiku-3-5": _price(0.8, 4, 0.08, 1),
    "claude-haiku": _price(1, 5, 0.1, 1.25),
    "haiku": _price(1, 5, 0.1, 1.25),
    # OpenAI (the codex runner): cached input at a tenth, no charge of its own for writes.
    "gpt-5-mini": _price(0.25, 2, 0.025, 0.25),
    "gpt-5": _price(1.25, 10, 0.125, 1.25),
    # Google (the gemini runner).
    "gemini-2.5-flash": _price(0.3, 2.5, 0.075, 0.3),
    "gemini-2.5-pro": _price(1.25, 10, 0.31, 1.25),
}

#: The model a runner's reviews are priced as when none is named.
RUNNER_MODELS: Final[dict[str, str]] = {
    "claude": "claude-sonnet",
    "codex": "gpt-5",
    "gemini": "gemini-2.5-pro",
}


class Prices:
    """The defaults with a project's `quality_gate.prices` over them."""

    def __init__(self, table: Mapping[str, ModelPrice] | None = None) -> None:
        self.table = {**DEFAULT_PRICES, **(table or {})}
        #: Longest names first, so the most specific entry matches.
        self._names = sorted(self.table, key=len, reverse=True)

    def model_for(self, runner: str, model: str | None) -> str | None:
        """The model a task is priced as: the one named, else the runner's default."""
        return model or RUNNER_MODELS.get(runner)

    def of(self, model: str | None) -> ModelPrice | None:
        """The price of `model` (exact name or the longest entry it starts with), or None."""
        if not model:
            return None
        name = model.strip().lower()
        found = self.table.get(name)
        if found is not None:
            return found
        for entry in self._names:
            if name.startswith(entry.lower()):
                return self.table[entry]
        return None

    def cost(self, usage: RequestUsage, model: str | None) -> float | None:
        """What `usage` costs at `model`'s price (None: no price known)."""
        price = self.of(model)
        if price is None:
            return None
        return cost_at(price, usage)

    def counted(self, usage: RequestUsage, model: str | None) -> float:
        """What a call counts against a cap: its reported cost, else its priced tokens, else 0."""
        if usage.cost_usd is not None:
            return usage.cost_usd
        return self.cost(usage, usage.model or model) or 0.0


def cost_at(price: ModelPrice, usage: RequestUsage) -> float:
    """USD of `usage` at `price` (cached tokens at plain input when the price names none)."""
    read = price.input if price.cache_read is None else price.cache_read
    write = price.input if price.cache_write is None else price.cache_write
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * read
        + usage.cache_creation_tokens * write
    )
    return round(total / 1_000_000, 6)
