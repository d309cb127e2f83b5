"""A small, safe arithmetic evaluator (``ast``-based; no ``eval``) for the reward parsers."""

from __future__ import annotations

import ast
import math
from fractions import Fraction

_MAX_POWER = 64


class ArithmeticError_(ValueError):
    """An expression the evaluator refuses (unknown syntax, huge power, division by zero)."""


def _eval(node: ast.AST, numbers: list[int], *, allow_functions: bool) -> Fraction | float:
    if isinstance(node, ast.Expression):
        return _eval(node.body, numbers, allow_functions=allow_functions)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        if isinstance(node.value, int):
            numbers.append(node.value)
            return Fraction(node.value)
        numbers.append(node.value)  # type: ignore[arg-type]
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval(node.operand, numbers, allow_functions=allow_functions)
        return value if isinstance(node.op, ast.UAdd) else -value
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, numbers, allow_functions=allow_functions)
        right = _eval(node.right, numbers, allow_functions=allow_functions)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            if right == 0:
                raise ArithmeticError_("division by zero")
            return left / right
        if isinstance(node.op, ast.Pow) and allow_functions:
            if abs(right) > _MAX_POWER:
                raise ArithmeticError_("power too large")
            if isinstance(right, Fraction) and right.denominator == 1 and left != 0:
                return left ** int(right)
            return float(left) ** float(right)
    if allow_functions and isinstance(node, ast.Name) and node.id in ("pi", "e"):
        return math.pi if node.id == "pi" else math.e
    if (
        allow_functions
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "sqrt"
        and len(node.args) == 1
    ):
        value = float(_eval(node.args[0], numbers, allow_functions=allow_functions))
        if value < 0:
            raise ArithmeticError_("square root of a negative number")
        root = math.isqrt(int(value)) if value == int(value) else None
        return Fraction(root) if root is not None and root * root == value else math.sqrt(value)
    raise ArithmeticError_(f"unsupported syntax {type(node).__name__}")


def evaluate(expr: str, *, allow_functions: bool = False) -> tuple[Fraction | float, list]:
    """``(value, numbers used)`` of an arithmetic expression; raises ``ArithmeticError_``.

    Only numbers, ``+ - * /`` and parentheses are accepted; ``allow_functions`` adds ``**``,
    ``sqrt(...)``, ``pi`` and ``e``. Integer arithmetic is exact (``Fraction``).
    """
    if len(expr) > 500:
        raise ArithmeticError_("expression too long")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise ArithmeticError_(f"not an expression: {err.msg}") from None
    numbers: list = []
    return _eval(tree, numbers, allow_functions=allow_functions), numbers
