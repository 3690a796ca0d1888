"""The engine never imports Qt or the GUI (docs/design.md#engine-and-gui), checked in a clean interpreter."""

from tests import fresh_imports


def test_importing_the_engine_loads_no_qt():
    code = ("import sys, pkgutil, importlib, engine\n"
            "for m in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
            "    importlib.import_module(m.name)\n"
            "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph', 'gui'))\n"
            "print(','.join(bad))\n")
    out = fresh_imports.run(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ""
