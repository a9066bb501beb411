"""Fuzzing the API from its own OpenAPI document (schemathesis) against a real `resident up`: valid and
invalid requests for every operation, and never a 5xx, an undocumented status, or an answer that
breaks the document.

The event stream (it never ends), `replication sync` (it rightly waits out its timeout with no
Realm), `backup` and `sessions.start` (they write wherever they are told, and a fuzzer would tell
them anywhere on this machine), and the routes that read the files and folders they are told
(`knowledge.ingest`, `knowledge.import_legacy`, `sessions.candidates`, `sessions.import`, `skills.add_folder`: a fuzzer
would have them read this machine from `/`) are left out; their bad input is covered in
test_api_server.py. The run is bounded: a few
hundred requests in all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from resident.api.openapi import openapi_document
from tests.api_helpers import UpProcess

EXAMPLES_PER_OPERATION = 8

schema = schemathesis.openapi.from_dict(openapi_document()).exclude(
    operation_id=[
        "events", "replication.sync", "home.backup", "sessions.start", "knowledge.ingest", "knowledge.import_legacy",
        "sessions.candidates", "sessions.import", "skills.add_folder",
    ]
)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    with UpProcess(tmp_path_factory.mktemp("fuzz") / "home") as process:
        with process.client() as http:
            assert http.post("/v1/memory/enable", json={}).status_code == 200
            assert http.post("/v1/members/deven/remember", json={"text": "something to find"}).status_code == 200
        yield process
        assert process.proc is not None
        assert process.proc.poll() is None, f"the server died under fuzzing:\n{process.log_tail()}"


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_fuzzed_requests_get_documented_answers_and_never_a_server_error(
    case: schemathesis.Case[Any], up: UpProcess
) -> None:
    response = case.call(base_url=up.url, headers=up.headers)
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
