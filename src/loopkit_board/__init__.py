"""loopkit's front-ends: a web board with a chat per run (``python -m loopkit_board``) and a
Slack bot (``python -m loopkit_board.slack``), both on :mod:`loopkit_board.service`.

Its own package, so the library never imports a web framework (the ``board`` extra installs
Starlette, uvicorn, Jinja2 and argon2).
"""
