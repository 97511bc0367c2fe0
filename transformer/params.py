"""Parameters from the API and the page, checked before any work: one clear message per kind of mistake, and
no silent coercion (a fraction is not truncated, a list is not a number, a number is not text). Torch-free."""
from __future__ import annotations

import re

WHOLE = re.compile(r"[+-]?\d{1,9}")


def shown(value) -> str:
    """A value as a message quotes it: short, and printable whatever it holds."""
    return (ascii(value)[:24] if not isinstance(value, str)
            else repr(value[:20].encode("utf-8", "replace").decode()))


def whole_number(value, what: str, low: int, high: int) -> int:
    """`value` as a whole number from `low` to `high`: an int, a float without a fraction, or a string of
    digits."""
    expected = f"The {what} must be a whole number from {low} to {high}"
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{expected}; none was given." if value is None else f"{expected}, not {value}.")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{expected}, not the fraction {value:g}.")
        value = int(value)
    elif isinstance(value, str) and WHOLE.fullmatch(value.strip()):
        value = int(value.strip())
    elif not isinstance(value, int):
        raise ValueError(f"{expected}, not {shown(value)}.")
    if not low <= value <= high:
        raise ValueError(f"{expected}; {value} is not.")
    return value


def text(value, what: str, required: bool = False) -> str:
    """`value` as text: a string (None is empty), with no lone surrogate (a half of an emoji's UTF-16
    pair)."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValueError(f"The {what} must be text, not {type(value).__name__} {shown(value)}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"The {what} holds a character that is not text (a lone surrogate): type it "
                         f"again.") \
            from None
    if required and not value.strip():
        raise ValueError(f"The {what} is empty.")
    return value
