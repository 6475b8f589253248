"""Polls: a question and 2 to 10 options, embedded in mail as ``{{{poll:ID}}}``.

Owns ``polls`` and ``poll_votes``: the records and their counts (``_polls``), the bodies
of /polls (``_requests``), the signed vote links and their rendering into templates'
and campaigns' content (``_links``), and the votes the links record, once a voter, with
their ``poll.voted`` events (``_votes``). The email, campaign and automation contexts
render vote links through this face; the public vote route calls :func:`cast_vote`.
"""

from __future__ import annotations

from mailbridge.services.polls._links import (
    PollLinks,
    Voter,
    check_embedded_polls,
    poll_links,
    read_vote_token,
)
from mailbridge.services.polls._polls import (
    create_poll,
    delete_poll,
    list_polls,
    poll_view,
    poll_with_counts,
    update_poll,
    vote_counts,
)
from mailbridge.services.polls._requests import NewPoll, PollFields
from mailbridge.services.polls._votes import VoteResult, cast_vote, list_votes, vote_view

__all__ = [
    "NewPoll",
    "PollFields",
    "PollLinks",
    "VoteResult",
    "Voter",
    "cast_vote",
    "check_embedded_polls",
    "create_poll",
    "delete_poll",
    "list_polls",
    "list_votes",
    "poll_links",
    "poll_view",
    "poll_with_counts",
    "read_vote_token",
    "update_poll",
    "vote_counts",
    "vote_view",
]
