"""The OpenAPI schema documents every ledger route with each of its error responses."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

# What every operation with a body documents (attest.schema.document_contract).
SHARED = {"413", "415", "500", "503"}


@pytest.mark.parametrize(
    ("path", "statuses"),
    [
        ("/v1/observations", {"201", "400", "401", "403", "404", "409", "429"}),
        ("/v1/recall", {"200", "400", "401", "403", "429"}),
        ("/v1/citations/resolve", {"200", "400", "401", "403", "404", "422", "429", "500"}),
        ("/v1/facts", {"201", "400", "401", "403", "404", "429"}),
        ("/v1/facts/{fact_id}/retract", {"200", "400", "401", "403", "404", "409", "429"}),
    ],
)
def test_schema_lists_each_ledger_route_with_its_errors(api, path, statuses):
    schema = api.get("/v1/openapi.json").json()
    operation = schema["paths"][path]["post"]
    assert set(operation["responses"]) == statuses | SHARED
    assert operation["security"] == [{"projectCredential": []}]


def test_schema_documents_the_record_inventory_and_its_parameters(api):
    operation = api.get("/v1/openapi.json").json()["paths"]["/v1/facts"]["get"]
    assert set(operation["responses"]) == {"200", "400", "401", "403", "429", "500", "503"}
    names = {parameter["name"] for parameter in operation["parameters"]}
    assert names == {"subject", "predicate", "status", "limit", "after"}
