"""Token cost accounting from a price table file (judges/prices.toml by default).

No price lives in code. A provider:model without an entry has an undefined cost:
``None`` plus the reason, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from samples import InputError

DEFAULT_PRICES = Path(__file__).with_name("prices.toml")


@dataclass(frozen=True, kw_only=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float
    source: str


@dataclass(frozen=True, kw_only=True)
class Cost:
    """Dollars for some tokens, or None with the reason it is unknown."""

    usd: float | None
    reason: str | None = None


class PriceTable:
    def __init__(self, entries: dict[tuple[str, str], Price], path: str) -> None:
        self.entries = entries
        self.path = path

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        from judges.tomlfile import load_toml

        path = Path(path) if path else DEFAULT_PRICES
        data, _ = load_toml(path, "price table")
        entries: dict[tuple[str, str], Price] = {}
        for provider, models in data.items():
            if not isinstance(models, dict):
                raise InputError(f"{path}: [{provider}] must be a table of model = {{input, output, source}}")
            for model, entry in models.items():
                where = f"{path}: [{provider}] {model!r}"
                if not isinstance(entry, dict) or set(entry) - {"input", "output", "source"}:
                    raise InputError(f"{where}: expected {{ input = USD/Mtok, output = USD/Mtok, source = '...' }}")
                try:
                    price = Price(input_per_mtok=float(entry["input"]), output_per_mtok=float(entry["output"]),
                                  source=str(entry.get("source", "")))
                except (KeyError, TypeError, ValueError):
                    raise InputError(f"{where}: input and output must be numbers (USD per million tokens)") from None
                if price.input_per_mtok < 0 or price.output_per_mtok < 0:
                    raise InputError(f"{where}: prices must be >= 0")
                entries[(provider, model)] = price
        return cls(entries, str(path))

    def lookup(self, provider: str, model: str) -> Price | None:
        return self.entries.get((provider, model)) or self.entries.get((provider, "*"))

    def cost(self, provider: str, model: str, input_tokens: int | None, output_tokens: int | None) -> Cost:
        price = self.lookup(provider, model)
        if price is None:
            return Cost(usd=None, reason=f"no price for {provider}:{model} in {self.path}")
        if input_tokens is None or output_tokens is None:
            if price.input_per_mtok == 0 and price.output_per_mtok == 0:
                return Cost(usd=0.0)
            return Cost(usd=None, reason="token counts not reported")
        return Cost(usd=(input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6)
