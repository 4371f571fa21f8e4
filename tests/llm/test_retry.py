"""The stream's retry policy as a table (``_errors.retry_delay``): which failures are tried again, after how long."""

from __future__ import annotations

from typing import get_args, get_type_hints

import pytest

from dashfloat.llm._errors import (
    DROPPED_NOTICE,
    RETRYABLE_KINDS,
    Kind,
    OptionsRejected,
    StreamError,
    retry_delay,
    retry_notice,
)
from dashfloat.llm._limits import BACKOFF_BASE_S, MAX_ATTEMPTS, RETRY_AFTER_MAX_S
from dashfloat.llm._request import Optional


def failed(kind: Kind = "server_error", retry_after_s: float | None = None) -> StreamError:
    return StreamError(kind, "what to do", retry_after_s=retry_after_s)


@pytest.mark.parametrize(
    ("error", "attempt", "emitted", "delay"),
    [
        (failed(), 1, False, BACKOFF_BASE_S),
        (failed(), 2, False, BACKOFF_BASE_S * 2),  # doubled per retry
        (failed(), MAX_ATTEMPTS - 1, False, BACKOFF_BASE_S * 2 ** (MAX_ATTEMPTS - 2)),
        (failed(), MAX_ATTEMPTS, False, None),  # the last attempt's failure is reported
        (failed(), 1, True, None),  # the answer had begun: what was shown cannot be taken back
        (failed(retry_after_s=5.0), 1, False, 5.0),  # the server's delay, not the backoff
        (failed(retry_after_s=RETRY_AFTER_MAX_S), 1, False, RETRY_AFTER_MAX_S),
        (failed(retry_after_s=RETRY_AFTER_MAX_S + 0.1), 1, False, None),  # not waited out: reported with its delay
        (failed("rate_limited", retry_after_s=0.0), 1, False, 0.0),
    ],
)
def test_when_a_failed_attempt_is_tried_again(
    error: StreamError, attempt: int, emitted: bool, delay: float | None
) -> None:
    assert retry_delay(error, attempt, emitted) == delay


@pytest.mark.parametrize("kind", get_args(Kind))
def test_only_the_retryable_kinds_are_tried_again(kind: Kind) -> None:
    assert (retry_delay(failed(kind), 1, emitted=False) is not None) is (kind in RETRYABLE_KINDS)


def test_the_notice_names_the_reason_the_wait_and_the_attempt() -> None:
    error = StreamError("rate_limited", "slow down", reason="rate limited (429)")
    assert retry_notice(error, 0.25, 2) == f"rate limited (429); retrying in 0.2 s (attempt 2 of {MAX_ATTEMPTS})"


def test_every_field_a_provider_may_refuse_has_its_notice() -> None:
    refusable = set(get_args(get_type_hints(OptionsRejected.__init__)["field"]))
    assert set(DROPPED_NOTICE) == set(get_args(Optional)) == refusable
