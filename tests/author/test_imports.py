"""What test files import (read with ast) decides the lean PASS_TO_PASS lists (pure: texts and paths only)."""

from __future__ import annotations

from agentbon.author.imports import imported, lean_files, module_name

TREE = {
    "src/shop/__init__.py", "src/shop/cart.py", "src/shop/tax/__init__.py", "src/shop/tax/rates.py",
    "tests/test_cart.py", "tests/test_rates.py", "tests/test_tax.py", "tests/test_other.py", "tests/helpers.py",
    "src/shop/tests/__init__.py", "src/shop/tests/test_inside.py", "README.rst", "setup.py",
}  # fmt: skip


def test_module_names_follow_the_packages_above_a_file():
    assert module_name("src/shop/cart.py", TREE) == "shop.cart"
    assert module_name("src/shop/tax/__init__.py", TREE) == "shop.tax"
    assert module_name("src/shop/tests/test_inside.py", TREE) == "shop.tests.test_inside"
    assert module_name("tests/test_cart.py", TREE) == "test_cart"  # no __init__.py: pytest's rootdir-relative import
    assert module_name("setup.py", TREE) == "setup"


def test_imports_are_read_from_statements_relative_ones_and_doctest_lines():
    text = (
        "import os, shop.cart as c\nfrom shop.tax import rates\nfrom shop import *\nfrom .. import cart\nfrom ..tax.rates import RATE\n"
        "def f():\n    import json\npytest_plugins = ['shop.fixtures']\n"
    )
    assert imported(text, "src/shop/tests/test_inside.py", TREE) == {
        "os", "shop.cart", "shop.tax", "shop.tax.rates", "shop", "shop.tax.rates.RATE", "json", "shop.fixtures",
    }  # fmt: skip
    doc = "Usage::\n\n    >>> from shop.cart import Cart\n    >>> Cart(\n    ...   1)\n    >>> x = (\n"
    assert imported(doc, "README.rst", TREE) == {"shop.cart", "shop.cart.Cart"}  # a broken line does not hide others
    assert imported("def broken(:\n", "tests/test_other.py", TREE) == set()


def test_lean_files_keep_the_touched_the_changed_and_their_importers():
    texts = {
        "tests/test_cart.py": "from shop.cart import Cart\n",
        "tests/test_rates.py": "from shop.tax import rates\n",  # the submodule, named in a from-import
        "tests/test_tax.py": "import shop.tax\n",  # the package: the fix's module is not imported by it
        "tests/test_other.py": "import shop\nfrom helpers import make\n",
        "README.rst": ">>> import shop.tax.rates\n",
    }
    files = {*texts, "src/shop/tax/rates.py"}
    keep, modules = lean_files(files, ["src/shop/tax/rates.py"], ["tests/test_cart.py"], TREE, texts.__getitem__)
    assert modules == ["shop.tax.rates"]
    assert keep == {"tests/test_cart.py", "tests/test_rates.py", "README.rst", "src/shop/tax/rates.py"}
    package, _ = lean_files(files, ["src/shop/tax/__init__.py"], [], TREE, lambda path: texts.get(path, ""))
    assert package == {"tests/test_rates.py", "tests/test_tax.py", "README.rst"}  # importing shop.tax.x runs shop.tax

    def unreadable(path: str) -> str:
        raise OSError(path)

    assert lean_files(["tests/test_other.py"], ["src/shop/cart.py"], [], TREE, unreadable)[0] == {"tests/test_other.py"}
    whole, none = lean_files(files, ["shop/templates/page.html"], [], TREE, texts.__getitem__)
    assert whole == files and none == []  # no Python module changed: nothing says which tests it concerns
