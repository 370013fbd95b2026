"""A client generated from /openapi.json by openapi-python-client, used as a new user would.

Run by scripts/contract: python client.py BASE_URL TOKEN (the generated package
`rollboard_client` on sys.path). Creates a board, posts one event and a batch, reads the
top, writes one event to two boards at once, and asserts exact values; exits non-zero on any difference.
"""

import importlib
import pkgutil
import sys
import time

import rollboard_client.api
from rollboard_client import AuthenticatedClient
from rollboard_client.models import (
    BatchEvent,
    BoardWritten,
    ConfigBody,
    ErrorBody,
    EventBatch,
    EventIn,
    EventsResponse,
    MultiEvent,
    MultiEventsResponse,
    TopPage,
)


def operation(operation_id: str):
    """The generated module of an operation (named by its operationId, in snake case),
    under whichever tag the document files it."""
    for tag in pkgutil.iter_modules(rollboard_client.api.__path__):
        try:
            return importlib.import_module(f"rollboard_client.api.{tag.name}.{operation_id}")
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"no generated operation {operation_id}")


boards_get = operation("boards_get")
boards_put = operation("boards_put")
boards_post_events = operation("boards_post_events")
boards_history = operation("boards_history")
boards_top = operation("boards_top")
events_post_multi = operation("events_post_multi")


def main(base_url: str, token: str) -> None:
    client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)
    board = f"client-{time.time_ns()}"

    created = boards_put.sync_detailed(board, client=client, body=ConfigBody(slot="1h", windows=["1h", "24h"]))
    assert created.status_code == 201, created
    assert [str(w) for w in created.parsed.config.windows] == ["1h", "1d"], created.parsed

    one = boards_post_events.sync(board, client=client, body=EventIn(member="post:1", delta=2))
    assert isinstance(one, EventsResponse), one
    assert one.accepted == 1, one

    batch = boards_post_events.sync(
        board,
        client=client,
        body=EventBatch(
            events=[
                BatchEvent(member="post:2", delta=5),
                BatchEvent(member="post:1"),
                BatchEvent(member="post:3", at=-1),
            ]
        ),
    )
    assert isinstance(batch, EventsResponse), batch
    assert batch.accepted == 2, batch
    assert [(r.index, r.error.code) for r in batch.rejected] == [(2, "invalid_time")], batch.rejected

    page = boards_top.sync(board, client=client, window="24h", limit=10)
    assert isinstance(page, TopPage), page
    assert page.kind == "windowed" and page.board == board and str(page.window) == "1d", page
    got = [(e.rank, e.member, e.score) for e in page.entries]
    assert got == [(1, "post:2", 5), (2, "post:1", 3)], got

    missing = boards_history.sync(board, "post:3", client=client)
    assert isinstance(missing, ErrorBody) and missing.error.code == "member_not_found", missing
    status = boards_get.sync(board, client=client)
    assert status.name == board, status

    # One event to this board and a second one at once: one outcome per board, in order.
    other = f"{board}-tags"
    assert boards_put.sync_detailed(other, client=client, body=ConfigBody(slot="1h", windows=["1h"])).status_code == 201
    multi = events_post_multi.sync(client=client, body=MultiEvent(boards=[board, other], member="post:1", delta=4))
    assert isinstance(multi, MultiEventsResponse), multi
    outcomes = [(o.board, o.accepted, o.rejected, o.replayed) for o in multi.boards if isinstance(o, BoardWritten)]
    assert outcomes == [(board, 1, [], False), (other, 1, [], False)], multi.boards
    after = boards_top.sync(board, client=client, window="24h", limit=10)
    assert isinstance(after, TopPage), after
    got = [(e.rank, e.member, e.score) for e in after.entries]
    assert got == [(1, "post:1", 7), (2, "post:2", 5)], got
    print(
        f"generated client: board {board}: one event, a batch (2 accepted, 1 rejected), "
        f"history of a missing member, one event to two boards; top {got}"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
