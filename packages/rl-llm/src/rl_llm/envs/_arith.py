"""A small, safe arithmetic evaluator (``ast``-based; no ``eval``) and the one rule by which
the reward parsers compare numbers.

Every value is either exact (a ``Fraction``: integers, decimals as written, their sums,
products, quotients and integer powers) or inexact (a finite ``float``: ``pi``, ``e``, the
root of a non-square, a fractional power). The work is bounded whatever the input: the
expression is at most ``_MAX_CHARS`` long and ``_MAX_DEPTH`` deep, no exact value grows past
``_MAX_BITS`` bits and no float past the float range; anything else is refused with
:class:`ArithmeticError_`, which the parsers score as "no value".
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from fractions import Fraction

_MAX_POWER = 64
_MAX_CHARS = 500
_MAX_DEPTH = 100
#: The largest exact value kept, in bits of its numerator or denominator (about 1,200 digits).
_MAX_BITS = 4096
#: Floats tell neighbouring integers apart only below this magnitude.
_FLOAT_EXACT_LIMIT = 2.0**53
_DECIMAL = re.compile(r"([+-]?)(\d*)\.?(\d*)(?:[eE]([+-]?\d+))?")

Number = Fraction | float


class ArithmeticError_(ValueError):
    """An expression the evaluator refuses (unknown syntax, huge value, division by zero)."""


def _checked(value: Number) -> Number:
    """``value`` if it is within the bounds (finite float, exact value under ``_MAX_BITS``)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ArithmeticError_("value outside the float range")
        return value
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > _MAX_BITS:
        raise ArithmeticError_(f"exact value over {_MAX_BITS} bits")
    return value


def exact_decimal(text: str) -> Fraction | None:
    """The exact value of a decimal literal (``"12"``, ``"-0.75"``, ``"1.5e3"``), or ``None``
    when it is not one or is too large to hold exactly (over about 1,200 digits).

    Examples:
        >>> from rl_llm.envs._arith import exact_decimal
        >>> exact_decimal("10000000000000001"), exact_decimal("0.75"), exact_decimal("1e99999")
        (Fraction(10000000000000001, 1), Fraction(3, 4), None)
    """
    match = _DECIMAL.fullmatch(text.replace("_", ""))
    if match is None or not (match.group(2) or match.group(3)):
        return None
    sign, whole, frac, exp = match.groups()
    if exp is not None and len(exp.lstrip("+-")) > 6:
        return None
    power = (int(exp) if exp else 0) - len(frac)
    digits = (whole + frac).lstrip("0") or "0"
    # log2(10) < 3.33: both sizes are bounded before any large integer is built.
    if (len(digits) + max(power, 0)) * 3.33 > _MAX_BITS or max(-power, 0) * 3.33 > _MAX_BITS:
        return None
    value = Fraction(int(digits)) * Fraction(10) ** power
    return -value if sign == "-" else value


def _float(value: Number) -> float:
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise ArithmeticError_("value outside the float range")
    return result


def _sqrt(value: Number) -> Number:
    if value < 0:
        raise ArithmeticError_("square root of a negative number")
    if isinstance(value, Fraction):
        num, den = math.isqrt(value.numerator), math.isqrt(value.denominator)
        if num * num == value.numerator and den * den == value.denominator:
            return Fraction(num, den)
    return math.sqrt(_float(value))


def _power(left: Number, right: Number) -> Number:
    if abs(right) > _MAX_POWER:
        raise ArithmeticError_("power too large")
    if isinstance(left, Fraction) and isinstance(right, Fraction) and right.denominator == 1:
        if left == 0:
            if right < 0:
                raise ArithmeticError_("division by zero")
            return Fraction(int(right == 0))
        bits = max(left.numerator.bit_length(), left.denominator.bit_length())
        if bits * abs(int(right)) > _MAX_BITS:
            raise ArithmeticError_(f"exact value over {_MAX_BITS} bits")
        return left ** int(right)
    base = _float(left)
    if base < 0:
        raise ArithmeticError_("fractional power of a negative number")
    try:
        return base ** _float(right)
    except (OverflowError, ZeroDivisionError):
        raise ArithmeticError_("power outside the float range") from None


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    try:
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            if right == 0:
                raise ArithmeticError_("division by zero")
            return left / right
    except OverflowError:  # an exact value too large for the float it meets
        raise ArithmeticError_("value outside the float range") from None
    raise ArithmeticError_(f"unsupported operator {type(op).__name__}")


def _eval(node: ast.AST, source: str, numbers: list, depth: int, functions: bool) -> Number:
    if depth > _MAX_DEPTH:
        raise ArithmeticError_(f"expression nested deeper than {_MAX_DEPTH}")
    depth += 1
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        if isinstance(node.value, int):
            numbers.append(node.value)
            return _checked(Fraction(node.value))
        # The literal as written, not its rounded float: decimals are exact.
        value = exact_decimal(ast.get_source_segment(source, node) or "")
        if value is None:
            raise ArithmeticError_("decimal literal too large")
        numbers.append(value)
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval(node.operand, source, numbers, depth, functions)
        return value if isinstance(node.op, ast.UAdd) else -value
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, source, numbers, depth, functions)
        right = _eval(node.right, source, numbers, depth, functions)
        if isinstance(node.op, ast.Pow) and functions:
            return _checked(_power(left, right))
        return _checked(_binary(node.op, left, right))
    if functions and isinstance(node, ast.Name) and node.id in ("pi", "e"):
        return math.pi if node.id == "pi" else math.e
    if (
        functions
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "sqrt"
        and len(node.args) == 1
        and not node.keywords
    ):
        return _sqrt(_eval(node.args[0], source, numbers, depth, functions))
    raise ArithmeticError_(f"unsupported syntax {type(node).__name__}")


def evaluate(expr: str, *, allow_functions: bool = False) -> tuple[Number, list]:
    """``(value, numbers used)`` of an arithmetic expression; raises ``ArithmeticError_``.

    Only numbers, ``+ - * /`` and parentheses are accepted; ``allow_functions`` adds ``**``
    (exponents up to 64), ``sqrt(...)``, ``pi`` and ``e``. Integer and decimal arithmetic is
    exact (``Fraction``); a float appears only with ``pi``, ``e``, an irrational root or a
    fractional power.
    """
    if len(expr) > _MAX_CHARS:
        raise ArithmeticError_(f"expression longer than {_MAX_CHARS} characters")
    source = expr.strip()
    try:
        # A reply such as "1or 2" makes the tokenizer warn ("invalid decimal literal"); the
        # reply is refused below like any other non-expression, so the warning stays here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise ArithmeticError_(f"not an expression: {type(err).__name__}") from None
    numbers: list = []
    return _eval(tree.body, source, numbers, 0, allow_functions), numbers


def _literal(node: ast.AST) -> bool:
    """A number as written, with at most one sign: ``3``, ``-0.5``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _fraction(node: ast.AST) -> bool:
    """A fraction of two literals that is not a whole number: ``1/2``, ``-3/4``, ``6/4``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        node = node.operand
    if not (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and _literal(node.left)
        and _literal(node.right)
    ):
        return False
    try:
        value = Fraction(ast.unparse(node.left)) / Fraction(ast.unparse(node.right))
    except (ValueError, ZeroDivisionError):
        return False
    return value.denominator != 1


def _rational(node: ast.AST) -> bool:
    return _literal(node) or _fraction(node)


def unsimplified_part(expr: str) -> str | None:
    """The first part of ``expr`` that a final answer would have worked out, or ``None``.

    A final answer states its value; it does not leave arithmetic between plain numbers to
    the reader. Refused: an operator between two numbers or fractions (``2+2``, ``2**10``,
    ``3*4*\\pi``, ``1/2+1/3``), a fraction that is a whole number (``8/2``), a sign on a sign
    (``--4``) and the root of a perfect square (``sqrt(16)``). Kept: numbers, fractions
    (``1/2``, ``6/4``), and terms with an irrational part (``2*sqrt(2)``, ``pi/2``,
    ``1+sqrt(3)``). An expression that does not parse has no unsimplified part (the
    evaluator refuses it on its own).

    Examples:
        >>> from rl_llm.envs._arith import unsimplified_part
        >>> unsimplified_part("2+2"), unsimplified_part("sqrt(16)"), unsimplified_part("2*sqrt(2)")
        ('2 + 2', 'sqrt(16)', None)
    """
    if len(expr) > _MAX_CHARS:
        return None
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div) and _literal(node.left) and _literal(node.right):
                if not _fraction(node):
                    return ast.unparse(node)
            elif _rational(node.left) and _rational(node.right):
                return ast.unparse(node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.UnaryOp):
            return ast.unparse(node)
        elif isinstance(node, ast.Call) and len(node.args) == 1 and _rational(node.args[0]):
            try:
                root = _sqrt(evaluate(ast.unparse(node.args[0]))[0])
            except ArithmeticError_:
                continue
            if isinstance(root, Fraction):
                return ast.unparse(node)
    return None


def same_number(predicted: Number, reference: Number, *, rel_tol: float = 1e-6) -> bool:
    """The one rule by which the reward parsers compare numeric answers.

    Two exact values (integers, exact rationals, decimals as written) are equal only when
    they are exactly equal: ``1000001`` never matches ``1000000``. A relative tolerance
    ``rel_tol`` applies only when a value is inexact (``pi``, an irrational root), and never
    reaches a quarter: an inexact value cannot match a neighbouring integer. Beyond
    ``2**53``, where a float cannot tell neighbouring integers apart, inexact values match
    nothing.

    Examples:
        >>> from fractions import Fraction
        >>> import math
        >>> from rl_llm.envs._arith import same_number
        >>> same_number(Fraction(1000001), Fraction(1000000)), same_number(Fraction(3, 4), 0.75)
        (False, True)
        >>> same_number(math.pi / 2, Fraction("1.5707963267948966"))
        True
    """
    if isinstance(predicted, Fraction) and isinstance(reference, Fraction):
        return predicted == reference
    try:
        a, b = _float(predicted), _float(reference)
    except ArithmeticError_:
        return False
    if max(abs(a), abs(b)) >= _FLOAT_EXACT_LIMIT:
        return False
    return abs(a - b) <= min(rel_tol * max(1.0, abs(b)), 0.25)
