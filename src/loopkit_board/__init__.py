"""loopkit's front-ends: the web board (``python -m loopkit_board``) and the Slack bot
(``python -m loopkit_board.slack``). Their own package, so the library never imports a web stack."""
