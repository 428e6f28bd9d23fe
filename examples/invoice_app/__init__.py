"""Invoice Editor: a small PySide6 demo app with three deliberate gaps (see README.md).

Run it with ``python -m invoice_app [--file PATH]`` from the ``examples/`` folder.
"""
