"""Kubernetes resource quantities (``250m``, ``128Mi``, ``1e3``), read exactly as Kubernetes does.

The grammar (from ``k8s.io/apimachinery/pkg/api/resource``)::

    quantity  ::= signedNumber suffix
    number    ::= digits | digits "." digits | digits "." | "." digits
    suffix    ::= binarySI | decimalSI | ("e" | "E") signedDigits
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimalSI ::= n | u | m | "" | k | M | G | T | P | E

Values are exact ``Decimal`` numbers; ``cpu_millis`` and ``memory_bytes`` round up like
Kubernetes' ``MilliValue()`` and ``Value()``.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal

__all__ = ["cpu_millis", "memory_bytes", "parse_quantity"]

_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)"
    r"(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)"
)
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Far beyond anything a resource needs; keeps a typo like ``1e999999999`` from eating memory.
_MAX_EXPONENT = 1000


def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity string; raises ``ValueError`` with a plain message.

    Negative values parse (Kubernetes' parser accepts them); resource validation rejects them.
    """
    if not isinstance(text, str):
        raise ValueError(f"quantity must be a string, got {type(text).__name__}")
    match = _QUANTITY_RE.fullmatch(text)
    if match is None or not (match["int"] or match["frac"]):
        lead = _NUMBER_RE.match(text)
        if lead is not None and text[lead.end() :].isalpha():
            raise ValueError(
                f"invalid quantity {text!r}: unknown suffix {text[lead.end() :]!r} "
                "(use m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)"
            )
        raise ValueError(
            f"invalid quantity {text!r}: expected a number with an optional suffix "
            "(m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)"
        )
    int_digits = match["int"] or ""
    frac_digits = match["frac"] or ""
    digits = (int_digits + frac_digits).lstrip("0") or "0"
    exponent = -len(frac_digits)
    multiplier = 1
    suffix = match["suffix"]
    if suffix in _BINARY:
        multiplier = 1024 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        exponent += _DECIMAL[suffix]
    else:
        power = int(suffix[1:])
        if abs(power) > _MAX_EXPONENT:
            raise ValueError(f"invalid quantity {text!r}: exponent out of range")
        exponent += power
    sign = 1 if match["sign"] == "-" else 0
    number = Decimal((sign, tuple(int(d) for d in digits), exponent))
    with decimal.localcontext(_exact_context(digits)) as ctx:
        value = number * multiplier
        if ctx.flags[decimal.Inexact]:  # pragma: no cover - the context is sized to be exact
            raise ValueError(f"invalid quantity {text!r}: too many digits")
    return value


def _exact_context(digits: str) -> decimal.Context:
    return decimal.Context(
        prec=len(digits) + 60,
        Emax=decimal.MAX_EMAX,
        Emin=decimal.MIN_EMIN,
        traps=[decimal.InvalidOperation],
    )


def _ceil_scaled(value: Decimal, scale: int) -> int:
    """``ceil(value * scale)`` computed exactly, however many digits ``value`` has."""
    digits = len(value.as_tuple().digits)
    with decimal.localcontext(_exact_context("0" * digits)):
        return int((value * scale).to_integral_value(rounding=decimal.ROUND_CEILING))


def _non_negative(text: str) -> Decimal:
    value = parse_quantity(text)
    if value < 0:
        raise ValueError(f"invalid quantity {text!r}: must not be negative")
    return value


def cpu_millis(text: str) -> int:
    """Milli-CPUs, rounded up like ``MilliValue()``: ``"250m"`` -> 250, ``"1u"`` -> 1."""
    value = _non_negative(text)
    return _ceil_scaled(value, 1000)


def memory_bytes(text: str) -> int:
    """Whole bytes, rounded up like ``Value()``: ``"128Mi"`` -> 134217728, ``"1.5k"`` -> 1500."""
    value = _non_negative(text)
    return _ceil_scaled(value, 1)
