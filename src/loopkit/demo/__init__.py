"""``python -m loopkit.demo``: the card runner on the invoice app (see ``__main__``)."""
