"""The Slack bot (``python -m loopkit_board.slack``): card runs started from Slack messages,
followed in their threads, with a chat per thread. See docs/slack.md.

Modules: :mod:`~loopkit_board.slack.bot` (the bolt app and the threads' followers),
:mod:`~loopkit_board.slack.commands` (``<role> <card>``), :mod:`~loopkit_board.slack.config`
(settings and tokens), :mod:`~loopkit_board.slack.posts` (what goes in a thread),
:mod:`~loopkit_board.slack.threads` (which thread follows which run, persisted).
"""
