"""What LLM extraction may spend: a price table and caps per run and per partition.

Prices are USD per million tokens, input and output, per model (:data:`DEFAULT_PRICES`,
overridden from configuration). Before a request is sent, its cost is *reserved*:
the exact cl100k count of the prompt plus the most output the request allows
(``max_completion_tokens``), priced. If any cap would be passed, nothing is sent
and extraction stops there (the rest of the chunks are deferred, not rejected);
after the answer, the reservation is replaced by what the API billed (``usage``).
So a run never spends more than its cap, whatever the concurrency.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    """A model's price in USD per million input and per million output tokens."""

    input_per_1m: float
    output_per_1m: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for that many tokens."""
        return (input_tokens * self.input_per_1m + output_tokens * self.output_per_1m) / 1_000_000


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
}
"""USD per 1M tokens (OpenAI list prices, standard tier); override per deployment in configuration."""


def price_table(overrides: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Price]:
    """The default table with ``{model: {"input_per_1m": …, "output_per_1m": …}}`` entries laid over it."""
    table = dict(DEFAULT_PRICES)
    for model, p in (overrides or {}).items():
        try:
            table[model] = Price(float(p["input_per_1m"]), float(p["output_per_1m"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"price for {model!r} must be {{'input_per_1m': USD, 'output_per_1m': USD}}, got {p!r}"
            ) from exc
    return table


def price_for(model: str, table: Mapping[str, Price]) -> Price:
    """The model's price; ValueError when the table has none, as an unpriced model cannot be capped."""
    try:
        return table[model]
    except KeyError:
        raise ValueError(
            f"no price for model {model!r} in the price table ({', '.join(sorted(table))}): add it to the "
            "propositions resource's `prices` so the cost cap can be enforced"
        ) from None


class CostMeter:
    """Spend against one cap (``None``: unlimited, still counted), safe across threads."""

    def __init__(self, scope: str, cap_usd: float | None) -> None:
        if cap_usd is not None and cap_usd < 0:
            raise ValueError(f"{scope} cost cap must be >= 0 USD, got {cap_usd}")
        self.scope = scope
        self.cap_usd = cap_usd
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.hit = False
        self._lock = threading.Lock()

    def _try_reserve(self, usd: float) -> bool:
        with self._lock:
            if self.cap_usd is not None and self.spent_usd + self.reserved_usd + usd > self.cap_usd + 1e-12:
                self.hit = True
                return False
            self.reserved_usd += usd
            return True

    def _settle(self, reserved: float, actual: float) -> None:
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved)
            self.spent_usd += actual

    def describe(self) -> str:
        """``<scope>: $<spent> spent, cap $<cap>`` (or ``no cap``), for :meth:`Budget.exhausted_message`."""
        cap = "no cap" if self.cap_usd is None else f"cap ${self.cap_usd:.4f}"
        return f"{self.scope}: ${self.spent_usd:.4f} spent, {cap}"


class Budget:
    """Several meters reserved together (the run's and the partition's): all or none."""

    def __init__(self, meters: Sequence[CostMeter]) -> None:
        self.meters = list(meters)

    def reserve(self, usd: float) -> bool:
        """Reserve ``usd`` on every meter, or on none: False when a cap would be passed (that meter is marked hit)."""
        done: list[CostMeter] = []
        for m in self.meters:
            if not m._try_reserve(usd):
                for d in done:
                    d._settle(usd, 0.0)
                return False
            done.append(m)
        return True

    def settle(self, reserved: float, actual: float) -> None:
        """Replace a reservation of ``reserved`` USD by the ``actual`` cost billed (0.0 if none), on every meter."""
        for m in self.meters:
            m._settle(reserved, actual)

    def exhausted_message(self) -> str:
        """Which cap stopped extraction, for logs and materialization metadata."""
        hit = [m for m in self.meters if m.hit] or self.meters
        return "; ".join(m.describe() for m in hit)
